// PLACEHOLDER: delete when the module has real sources.
namespace hearth { int gguf_placeholder = 0; }
