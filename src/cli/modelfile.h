// The client side of `hearth create NAME -f Modelfile`, as ollama's CLI does it: reads the
// Modelfile (FROM, PARAMETER, TEMPLATE, SYSTEM, MESSAGE, ADAPTER, LICENSE, REQUIRES;
// case-insensitive commands, `#` comments, "quoted" and `"""` multi-line values) into the
// /api/create request fields. A FROM or ADAPTER naming a local file is listed for upload: the
// caller sends it as a blob (HEAD/POST /api/blobs/sha256:...) and puts its digest under
// `files` / `adapters`. A FROM naming a model goes in `from`. Errors name the line.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace hearth::cli {

struct ModelfileCommand {
  std::string name;  // lower case: from, parameter, template, system, message, adapter, license, requires
  std::string key;   // PARAMETER's name or MESSAGE's role; empty otherwise
  std::string value;
  int line = 0;      // where the command starts (1-based)
};

Result<std::vector<ModelfileCommand>> parse_modelfile(const std::string& text);

struct CreatePlan {
  nlohmann::json request;               // /api/create body without the uploaded files' digests
  std::string model_file;               // FROM a local GGUF: its path (upload it into `files`)
  std::vector<std::string> adapter_files;  // ADAPTER local files (upload into `adapters`)
};

// Builds the request for model `name`. Relative paths are read from `base_dir` (the
// Modelfile's folder); `~/` is the home folder. `quantize` is empty or a type such as q4_K_M.
Result<CreatePlan> plan_create(const std::vector<ModelfileCommand>& commands, const std::string& base_dir,
                               const std::string& name, const std::string& quantize);

// The `files`/`adapters` key for an uploaded file: its base name ("model.gguf").
std::string upload_file_key(const std::string& path);

}  // namespace hearth::cli
