// The paged KV cache on the device: K and V rows live in chunk allocations made on demand
// (the pool's elastic chunks), reached through `chunks`, one device address per chunk (a
// uvec2: low, high word), bound by the including shader. Pool block b lives in chunk
// b / blocks_per_chunk at block slot b % blocks_per_chunk. A chunk is its block slots one
// after another, slot_words 32-bit words each (so a chunk holding fewer blocks, the pool's
// last, is only as long as its blocks); within a slot each offloaded layer has block_tokens
// F16 K rows and block_tokens V rows, starting at the word offsets the dispatch passes
// (k_word, v_word: the layer's place in a slot).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer KvWords { uint w[]; };

// The chunk holding sequence position p (through the block table), the first word of p's
// block slot in it and p's row in the block.
KvWords kv_chunk_row(uint p, out uint slot_word, out uint row) {
  const uint b = table[pc.table_off + p / pc.block_tokens];
  slot_word = (b % pc.blocks_per_chunk) * pc.slot_words;
  row = p % pc.block_tokens;
  return KvWords(chunks[b / pc.blocks_per_chunk]);
}
