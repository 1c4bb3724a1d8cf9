#version 450
// Writes K (or V) rows of n_tokens tokens into the paged F16 cache (paged_kv.glsl): token t
// (at positions[t]) goes to its block's row in the chunk holding that block, in the region
// starting at word `region` of the block's slot (the layer's K or V). One invocation per pair
// of halves (row_elems is even), so no two write the same word. With has_values, workgroups of
// z = 1 write the V rows of V (row elems v_row_elems, region v_region) in the same dispatch
// as z = 0 writes K: one dispatch per step and layer instead of two.
#extension GL_GOOGLE_include_directive : enable
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer C { uvec2 chunks[]; };
layout(std430, binding = 2) readonly buffer T { uint table[]; };
layout(std430, binding = 3) readonly buffer P { int positions[]; };
layout(std430, binding = 4) readonly buffer V { float v[]; };
layout(push_constant) uniform Push {
  uint row_elems, block_tokens, tok_base, table_off, blocks_per_chunk, region, slot_words;
  uint has_values, v_row_elems, v_region;
} pc;
#include "paged_kv.glsl"

void main() {
  const uint pair = gl_GlobalInvocationID.x;
  const uint t = gl_WorkGroupID.y;
  const bool values = gl_WorkGroupID.z == 1u;
  if (values && pc.has_values == 0u) return;
  const uint elems = values ? pc.v_row_elems : pc.row_elems;
  if (2u * pair >= elems) return;
  const uint pos = uint(positions[pc.tok_base + t]);
  uint slot_word, row;
  KvWords chunk = kv_chunk_row(pos, slot_word, row);
  const uint src = (pc.tok_base + t) * elems + 2u * pair;
  const vec2 h = values ? vec2(v[src], v[src + 1u]) : vec2(x[src], x[src + 1u]);
  chunk.w[slot_word + (values ? pc.v_region : pc.region) + (row * elems) / 2u + pair] = packHalf2x16(h);
}
