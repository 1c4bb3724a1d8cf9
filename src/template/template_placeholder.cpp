// PLACEHOLDER: delete when the module has real sources.
namespace hearth { int template_placeholder = 0; }
