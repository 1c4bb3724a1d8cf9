// PLACEHOLDER: delete when the module has real sources.
namespace hearth { int tokenizer_placeholder = 0; }
