#version 450
// Attention of query tokens over the paged KV cache in device memory, one workgroup per
// (query head, query token). K and V rows are F16 in the chunks of paged_kv.glsl, blocks of
// block_tokens rows; table[b] is the pool block holding positions [b*block_tokens,
// (b+1)*block_tokens). Like
// the CPU path: Q rounded to F16, Q.K in F32, softmax in F32, probabilities rounded to F16
// for the V product. scores is scratch of n_tokens * n_head * scores_stride floats. The
// dispatch covers tokens [tok_base, tok_base + groups_y) of one sequence, whose block table
// starts at table[table_off]. With n_splits > 1 (a decode step over a long sequence) the keys
// are split in ranges of split_len positions, one workgroup each (gl_WorkGroupID.z), so that
// the work spreads over the device instead of n_head workgroups walking every key: each
// writes its unnormalised output, max and sum to part (rows of head_dim_v + 2 floats), and
// attention_merge.comp combines them.
#extension GL_GOOGLE_include_directive : enable
layout(local_size_x = 64) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer C { uvec2 chunks[]; };
layout(std430, binding = 2) readonly buffer T { uint table[]; };
layout(std430, binding = 3) readonly buffer P { int positions[]; };
layout(std430, binding = 4) buffer S { float scores[]; };
layout(std430, binding = 5) writeonly buffer O { float o[]; };
layout(std430, binding = 6) writeonly buffer R { float part[]; };
layout(push_constant) uniform Push {
  uint n_head, n_head_kv, head_dim_k, head_dim_v;
  uint block_tokens, n_kv, causal, window;
  float scale, softcap;
  uint scores_stride, tok_base, table_off, blocks_per_chunk;
  uint k_word, v_word;
  uint n_splits, split_len;
  uint slot_words;
} pc;
#include "paged_kv.glsl"

// Element idx of the region starting at word `region` of a chunk.
float half_at(KvWords c, uint region, uint idx) {
  const vec2 h = unpackHalf2x16(c.w[region + (idx >> 1)]);
  return (idx & 1u) == 0u ? h.x : h.y;
}
float round_f16(float v) { return unpackHalf2x16(packHalf2x16(vec2(v, 0.0))).x; }

#define MAX_SHARED_Q 256
shared float sq[MAX_SHARED_Q];  // the query row, rounded to F16, when head_dim_k fits

void main() {
  const uint head = gl_WorkGroupID.x;
  const uint tok = pc.tok_base + gl_WorkGroupID.y;
  const uint tid = gl_LocalInvocationID.x;
  const uint kv_head = head / (pc.n_head / pc.n_head_kv);
  const int qpos = positions[tok];
  uint last = pc.n_kv;  // keys [first, last)
  if (pc.causal != 0u) last = min(last, uint(qpos) + 1u);
  uint first = 0u;
  if (pc.window != 0u && uint(qpos) + 1u > pc.window) first = uint(qpos) + 1u - pc.window;
  const bool split = pc.n_splits > 1u;
  if (split) {
    first = max(first, gl_WorkGroupID.z * pc.split_len);
    last = min(last, (gl_WorkGroupID.z + 1u) * pc.split_len);
  }
  const uint qbase = (tok * pc.n_head + head) * pc.head_dim_k;
  const uint sbase = (tok * pc.n_head + head) * pc.scores_stride;
  const uint krow = pc.n_head_kv * pc.head_dim_k;
  const uint vrow = pc.n_head_kv * pc.head_dim_v;

  // The query row once into shared memory; K rows read two halves per word (rows start on a
  // word when the head size and the row width are even, as in every supported model).
  const bool fast = pc.head_dim_k <= MAX_SHARED_Q && (pc.head_dim_k & 1u) == 0u && (krow & 1u) == 0u;
  if (fast) {
    for (uint i = tid; i < pc.head_dim_k; i += WG) sq[i] = round_f16(q[qbase + i]);
  }
  barrier();
  float m = -3.402823e38;
  for (uint p = first + tid; p < last; p += WG) {
    uint slot_word, row;
    KvWords c = kv_chunk_row(p, slot_word, row);
    const uint kb = row * krow + kv_head * pc.head_dim_k;
    float s = 0.0;
    if (fast) {
      const uint kw = slot_word + pc.k_word + (kb >> 1);
      for (uint i = 0; i < pc.head_dim_k; i += 2u) {
        const vec2 k2 = unpackHalf2x16(c.w[kw + (i >> 1)]);
        s += sq[i] * k2.x + sq[i + 1u] * k2.y;
      }
    } else {
      for (uint i = 0; i < pc.head_dim_k; ++i) s += round_f16(q[qbase + i]) * half_at(c, slot_word + pc.k_word, kb + i);
    }
    s *= pc.scale;
    if (pc.softcap > 0.0) s = pc.softcap * tanh(s / pc.softcap);
    scores[sbase + p] = s;
    m = max(m, s);
  }
  m = wg_max(m);
  float sum = 0.0;
  for (uint p = first + tid; p < last; p += WG) {
    const float e = exp(scores[sbase + p] - m);
    scores[sbase + p] = e;
    sum += e;
  }
  sum = wg_sum(sum);
  // One range: probabilities normalised, then rounded (the CPU's order); a split range keeps
  // them relative to its own max, the merge normalises.
  const float inv = split ? 1.0 : (sum > 0.0 ? 1.0 / sum : 0.0);
  for (uint p = first + tid; p < last; p += WG) scores[sbase + p] = round_f16(scores[sbase + p] * inv);
  memoryBarrierBuffer();
  barrier();
  const uint pbase = ((gl_WorkGroupID.y * pc.n_head + head) * pc.n_splits + gl_WorkGroupID.z) * (pc.head_dim_v + 2u);
  if (split && tid == 0u) {
    part[pbase + pc.head_dim_v] = m;
    part[pbase + pc.head_dim_v + 1u] = sum;
  }
  const uint obase = (tok * pc.n_head + head) * pc.head_dim_v;
  for (uint d = tid; d < pc.head_dim_v; d += WG) {
    float acc = 0.0;
    // A block's chunk is looked up once for its rows, and four rows' loads go out together:
    // one lookup chain (table, chunk address, value) per key kept the kernel waiting on memory.
    for (uint p = first; p < last;) {
      uint slot_word, row;
      KvWords c = kv_chunk_row(p, slot_word, row);
      const uint stop = min(last, p - row + pc.block_tokens);  // the end of p's block
      const uint region = slot_word + pc.v_word;
      const uint col = kv_head * pc.head_dim_v + d;
      for (; p + 3u < stop; p += 4u, row += 4u) {
        const float v0 = half_at(c, region, row * vrow + col);
        const float v1 = half_at(c, region, (row + 1u) * vrow + col);
        const float v2 = half_at(c, region, (row + 2u) * vrow + col);
        const float v3 = half_at(c, region, (row + 3u) * vrow + col);
        acc += scores[sbase + p] * v0 + scores[sbase + p + 1u] * v1 + scores[sbase + p + 2u] * v2 +
               scores[sbase + p + 3u] * v3;
      }
      for (; p < stop; ++p, ++row) acc += scores[sbase + p] * half_at(c, region, row * vrow + col);
    }
    if (split) {
      part[pbase + d] = acc;
    } else {
      o[obase + d] = acc;
    }
  }
}
