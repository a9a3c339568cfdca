// Configuration of the "pytorch" backend (TensorRT-LLM's PyTorch executor through an embedded
// CPython), parsed from JSON with strict validation like the sim backend's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace affinity::pytorch {

struct PyTorchConfig {
  std::string instanceName = "pytorch";
  std::string python;                   ///< interpreter (a venv's bin/python): Python's program_name
  std::string libpython;                ///< libpython3.X.so.1.0 of that interpreter, loaded RTLD_GLOBAL
  std::string hostLibrary;              ///< libaffinity_pyhost.so built for that Python's minor version
  std::vector<std::string> pythonPath;  ///< extra sys.path entries
  std::string model;                    ///< LLM(model=...): a Hugging Face id or a checkpoint directory
  std::string llmArgsJson = "{}";       ///< further LLM(...) keyword arguments, as a JSON object
  std::string envJson = "{}";           ///< environment set while the LLM is built (its worker processes inherit it)
  int32_t numRanks = 1;                 ///< attention-DP ranks (tensor_parallel_size with enable_attention_dp)
  int32_t tokensPerBlock = 32;          ///< kv_cache_config.tokens_per_block
  bool kvEventsEnabled = true;
  int64_t kvEventsPollMs = 50;
  int64_t kvEventsMaxBuffered = 1'000'000;
  /// How long a finished request whose output names no rank waits for the KV events that tell it (ms).
  int64_t kvEventsRankWaitMs = 200;
  int64_t statsPollMs = 200;            ///< 0: no statistics polling
  std::string kvCacheHashAlgo = "v1_block_key";  ///< the hashes in the LLM's KV events (routers hash prompts alike)

  /// The configuration in effect as JSON (also what the Python engine receives).
  std::string toJson() const;
};

/// Parses a JSON object; throws std::invalid_argument "pytorch config: '<key>': <problem>".
PyTorchConfig parsePyTorchConfig(const std::string& json);

}  // namespace affinity::pytorch
