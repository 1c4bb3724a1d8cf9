// The paged KV cache on the device: K and V rows live in chunk allocations made on demand
// (the pool's elastic chunks), reached through `chunks`, one device address per chunk (a
// uvec2: low, high word), bound by the including shader. Pool block b lives in chunk
// b / blocks_per_chunk at block slot b % blocks_per_chunk; within a chunk each offloaded
// layer has a K region and a V region of block_tokens F16 rows per block slot (fewer slots
// than blocks_per_chunk when the whole pool is smaller), starting at the word offsets the
// dispatch passes (k_word, v_word).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer KvWords { uint w[]; };

// The chunk holding sequence position p (through the block table) and p's row in it.
KvWords kv_chunk_row(uint p, out uint row) {
  const uint b = table[pc.table_off + p / pc.block_tokens];
  row = (b % pc.blocks_per_chunk) * pc.block_tokens + p % pc.block_tokens;
  return KvWords(chunks[b / pc.blocks_per_chunk]);
}
