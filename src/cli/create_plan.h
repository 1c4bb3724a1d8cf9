// The client side of `hearth create NAME -f Modelfile`, as ollama's CLI does it: the Modelfile,
// read by the store's parser (store/modelfile.h: one parser, one table of ollama's parameters,
// shared with the server's /api/create), becomes the /api/create request fields. A FROM or
// ADAPTER naming a local file is listed for upload: the caller sends it as a blob
// (HEAD/POST /api/blobs/sha256:...) and puts its digest under `files` / `adapters`. A FROM
// naming a model goes in `from`. Errors name the line.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/modelfile.h"
#include "util/result.h"

namespace hearth::cli {

struct CreatePlan {
  nlohmann::json request;               // /api/create body without the uploaded files' digests
  std::string model_file;               // FROM a local GGUF: its path (upload it into `files`)
  std::vector<std::string> adapter_files;  // ADAPTER local files (upload into `adapters`)
};

// Builds the request for model `name` from a parsed Modelfile. Relative paths are read from
// `base_dir` (the Modelfile's folder); `~/` is the home folder. `quantize` is empty or a type
// such as q4_K_M.
Result<CreatePlan> plan_create(const store::Modelfile& modelfile, const std::string& base_dir, const std::string& name,
                               const std::string& quantize);

// The `files`/`adapters` key for an uploaded file: its base name ("model.gguf").
std::string upload_file_key(const std::string& path);

}  // namespace hearth::cli
