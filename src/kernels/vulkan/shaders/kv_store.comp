#version 450
// Writes K (or V) rows of n_tokens tokens into the paged F16 cache (paged_kv.glsl): token t
// (at positions[t]) goes to its block's row in the chunk holding that block, in the region
// starting at word `region` of the block's slot (the layer's K or V). One invocation per pair
// of halves (row_elems is even), so no two write the same word.
#extension GL_GOOGLE_include_directive : enable
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer C { uvec2 chunks[]; };
layout(std430, binding = 2) readonly buffer T { uint table[]; };
layout(std430, binding = 3) readonly buffer P { int positions[]; };
layout(push_constant) uniform Push {
  uint row_elems, block_tokens, tok_base, table_off, blocks_per_chunk, region, slot_words;
} pc;
#include "paged_kv.glsl"

void main() {
  const uint pair = gl_GlobalInvocationID.x;
  const uint t = gl_WorkGroupID.y;
  if (2u * pair >= pc.row_elems) return;
  const uint pos = uint(positions[pc.tok_base + t]);
  uint slot_word, row;
  KvWords chunk = kv_chunk_row(pos, slot_word, row);
  const uint src = (pc.tok_base + t) * pc.row_elems + 2u * pair;
  chunk.w[slot_word + pc.region + (row * pc.row_elems) / 2u + pair] = packHalf2x16(vec2(x[src], x[src + 1u]));
}
