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
// 256 invocations: one key each in the score pass, and in the value pass KEY_LANES lanes of
// 64 output elements, each lane walking every KEY_LANES-th key, summed in shared memory at the
// end. With 64 invocations each output element walked every key alone: on an H200 a decode
// step's attention over ~100 keys took 24 us a layer, a chain of memory round trips.
#define WG 256
#define DIM_LANES 64u
#define KEY_LANES (WG / 64u)
layout(local_size_x = WG) in;
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
  const uint dim_lane = tid % DIM_LANES;
  const uint key_lane = tid / DIM_LANES;
  for (uint d0 = 0; d0 < pc.head_dim_v; d0 += DIM_LANES) {
    const uint d = d0 + dim_lane;
    float acc = 0.0;
    // A block's chunk is looked up once for its rows, and four rows' loads go out together:
    // one lookup chain (table, chunk address, value) per key kept the kernel waiting on memory.
    if (d < pc.head_dim_v) {
      for (uint p0 = first; p0 < last;) {
        uint slot_word, row0;
        KvWords c = kv_chunk_row(p0, slot_word, row0);
        const uint stop = min(last, p0 - row0 + pc.block_tokens);  // the end of p0's block
        const uint region = slot_word + pc.v_word;
        const uint col = kv_head * pc.head_dim_v + d;
        uint p = p0 + key_lane, row = row0 + key_lane;
        for (; p + 3u * KEY_LANES < stop; p += 4u * KEY_LANES, row += 4u * KEY_LANES) {
          const float v0 = half_at(c, region, row * vrow + col);
          const float v1 = half_at(c, region, (row + KEY_LANES) * vrow + col);
          const float v2 = half_at(c, region, (row + 2u * KEY_LANES) * vrow + col);
          const float v3 = half_at(c, region, (row + 3u * KEY_LANES) * vrow + col);
          acc += scores[sbase + p] * v0 + scores[sbase + p + KEY_LANES] * v1 +
                 scores[sbase + p + 2u * KEY_LANES] * v2 + scores[sbase + p + 3u * KEY_LANES] * v3;
        }
        for (; p < stop; p += KEY_LANES, row += KEY_LANES) acc += scores[sbase + p] * half_at(c, region, row * vrow + col);
        p0 = stop;
      }
    }
    hearth_red[tid] = acc;  // reduce.glsl's WG floats, free between its reductions
    barrier();
    if (key_lane == 0u && d < pc.head_dim_v) {
      float total = 0.0;
      for (uint k = 0; k < KEY_LANES; ++k) total += hearth_red[dim_lane + k * DIM_LANES];
      if (split) {
        part[pbase + d] = total;
      } else {
        o[obase + d] = total;
      }
    }
    barrier();
  }
}
