#version 450
// Writes K (or V) rows of n_tokens tokens into the paged F16 pool: token t (at positions[t])
// goes to row table[table_off + pos / block_tokens] * block_tokens + pos % block_tokens.
// One invocation per pair of halves (row_elems is even), so no two write the same word.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Pool { uint pool[]; };
layout(std430, binding = 2) readonly buffer T { uint table[]; };
layout(std430, binding = 3) readonly buffer P { int positions[]; };
layout(push_constant) uniform Push { uint row_elems, block_tokens, tok_base, table_off; } pc;

void main() {
  const uint pair = gl_GlobalInvocationID.x;
  const uint t = gl_WorkGroupID.y;
  if (2u * pair >= pc.row_elems) return;
  const uint pos = uint(positions[pc.tok_base + t]);
  const uint row = table[pc.table_off + pos / pc.block_tokens] * pc.block_tokens + pos % pc.block_tokens;
  const uint src = (pc.tok_base + t) * pc.row_elems + 2u * pair;
  pool[(row * pc.row_elems) / 2u + pair] = packHalf2x16(vec2(x[src], x[src + 1u]));
}
