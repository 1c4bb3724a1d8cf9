// The literal markers of every template family's replies, in one place (the parser, the family
// tables and the call readers share them). Internal to chat_output.
#pragma once

#include <string_view>

namespace hearth::chat_output_markers {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralOpen = "[TOOL_CALLS]";
constexpr std::string_view kDeepSeekOpen = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kDeepSeekClose = "<｜tool▁calls▁end｜>";
constexpr std::string_view kDeepSeekCallOpen = "<｜tool▁call▁begin｜>";
constexpr std::string_view kDeepSeekCallClose = "<｜tool▁call▁end｜>";
constexpr std::string_view kDeepSeekSep = "<｜tool▁sep｜>";
constexpr std::string_view kR7bThinkingOpen = "<|START_THINKING|>";
constexpr std::string_view kR7bThinkingClose = "<|END_THINKING|>";
constexpr std::string_view kR7bActionOpen = "<|START_ACTION|>";
constexpr std::string_view kR7bActionClose = "<|END_ACTION|>";
constexpr std::string_view kR7bResponseOpen = "<|START_RESPONSE|>";
constexpr std::string_view kR7bResponseClose = "<|END_RESPONSE|>";
constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kFunctionaryRecipient = ">>>";
constexpr std::string_view kFirefunctionOpen = " functools";
constexpr std::string_view kGraniteCall = "<|tool_call|>";
constexpr std::string_view kGraniteResponseOpen = "<response>";
constexpr std::string_view kGraniteResponseClose = "</response>";
constexpr std::string_view kKimiSectionOpen = "<|tool_calls_section_begin|>";
constexpr std::string_view kKimiSectionClose = "<|tool_calls_section_end|>";
constexpr std::string_view kKimiCallOpen = "<|tool_call_begin|>";
constexpr std::string_view kKimiArgsOpen = "<|tool_call_argument_begin|>";
constexpr std::string_view kKimiCallClose = "<|tool_call_end|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kHarmonyMessage = "<|message|>";
constexpr std::string_view kHarmonyStart = "<|start|>";
constexpr std::string_view kHarmonyEnd = "<|end|>";
constexpr std::string_view kHarmonyConstrain = "<|constrain|>";
constexpr std::string_view kHarmonyCall = "<|call|>";
constexpr std::string_view kHarmonyReturn = "<|return|>";
// Reasoning as a whole marker, and what ends it early (a thinking budget) in each family.
constexpr std::string_view kThinkCut = "\n</think>\n\n";
constexpr std::string_view kR7bThinkingCut = "\n<|END_THINKING|>\n\n";
constexpr std::string_view kHarmonyAnalysis = "<|channel|>analysis<|message|>";
constexpr std::string_view kHarmonyAnalysisCut = "<|end|><|start|>assistant<|channel|>final<|message|>";

}  // namespace hearth::chat_output_markers
