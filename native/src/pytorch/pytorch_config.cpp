#include "pytorch_config.h"

#include <map>
#include <stdexcept>

#include "../core/json_reader.h"

namespace affinity::pytorch {
namespace {

[[noreturn]] void fail(const std::string& key, const std::string& msg) {
  throw std::invalid_argument("pytorch config: '" + key + "': " + msg);
}

class Reader : public JsonObjectReader {
 public:
  Reader(const json& obj, std::string path) : JsonObjectReader(obj, std::move(path), "pytorch config") {}
};

void requireNonEmpty(const std::string& value, const std::string& key, const std::string& hint) {
  if (value.empty()) fail(key, "required (" + hint + ")");
}

}  // namespace

PyTorchConfig parsePyTorchConfig(const std::string& text) {
  PyTorchConfig c;
  json root = json::object();
  if (text.find_first_not_of(" \t\r\n") != std::string::npos) {
    try {
      root = json::parse(text);
    } catch (const json::parse_error& e) {
      throw std::invalid_argument(std::string("pytorch config: malformed JSON: ") + e.what());
    }
  }
  bool ranksGiven = false, blockGiven = false;
  json llmArgs = json::object();
  {
    Reader r(root, "");
    r.string("instance_name", c.instanceName);
    r.string("python", c.python);
    r.string("libpython", c.libpython);
    r.string("host_library", c.hostLibrary);
    r.string("model", c.model);
    if (const json* p = r.find("python_path")) {
      if (!p->is_array()) fail("python_path", "expected a list of directories, found " + p->dump());
      for (const auto& e : *p) {
        if (!e.is_string()) fail("python_path", "expected a list of directories, found " + e.dump());
        c.pythonPath.push_back(e.get<std::string>());
      }
    }
    if (const json* a = r.find("llm_args")) {
      if (!a->is_object()) fail("llm_args", "expected an object of tensorrt_llm.LLM arguments, found " + a->dump());
      if (a->contains("model")) fail("llm_args.model", "set the model with the top-level key 'model'");
      llmArgs = *a;
    }
    if (const json* e = r.find("env")) {
      if (!e->is_object()) fail("env", "expected an object of environment variables, found " + e->dump());
      for (auto it = e->begin(); it != e->end(); ++it) {
        if (!it.value().is_string()) fail("env." + it.key(), "expected a string, found " + it.value().dump());
      }
      c.envJson = e->dump();
    }
    ranksGiven = root.is_object() && root.contains("num_ranks");
    blockGiven = root.is_object() && root.contains("tokens_per_block");
    r.integer("num_ranks", c.numRanks, 1, 1024);
    r.integer("tokens_per_block", c.tokensPerBlock, 1, 4096);
    r.integer("stats_poll_interval_ms", c.statsPollMs, 0, 3'600'000);
    const std::map<std::string, std::string> algos = {
        {"v1_block_key", "v1_block_key"}, {"v2_sha256", "v2_sha256"}, {"v2_sha256_64", "v2_sha256_64"}};
    r.choice("kv_cache_hash_algo", c.kvCacheHashAlgo, algos);
    if (const json* ev = r.find("kv_events")) {
      Reader e(*ev, "kv_events");
      e.boolean("enabled", c.kvEventsEnabled);
      e.integer("poll_interval_ms", c.kvEventsPollMs, 1, 3'600'000);
      e.integer("max_buffered", c.kvEventsMaxBuffered, 1, int64_t{1} << 40);
      e.integer("rank_wait_ms", c.kvEventsRankWaitMs, 0, 600'000);
    }
  }
  requireNonEmpty(c.python, "python", "the Python interpreter that has tensorrt_llm, e.g. /opt/trtllm/bin/python");
  requireNonEmpty(c.libpython, "libpython", "the Java launcher fills it in from 'python'");
  requireNonEmpty(c.hostLibrary, "host_library", "the Java launcher fills it in");
  requireNonEmpty(c.model, "model", "a Hugging Face model id or a checkpoint directory");

  // Ranks and block size follow from the LLM arguments; explicit values must agree with them.
  const bool adp = llmArgs.value("enable_attention_dp", false);
  int32_t ranks = 1;
  if (adp) {
    const json tp = llmArgs.value("tensor_parallel_size", json(1));
    if (!tp.is_number_integer() || tp.get<int64_t>() < 1) {
      fail("llm_args.tensor_parallel_size", "expected a positive integer, found " + tp.dump());
    }
    ranks = static_cast<int32_t>(tp.get<int64_t>());
  }
  if (ranksGiven && c.numRanks != ranks) {
    fail("num_ranks", std::to_string(c.numRanks) + " disagrees with llm_args (" + std::to_string(ranks) +
                          " attention-DP ranks: tensor_parallel_size with enable_attention_dp, else 1)");
  }
  c.numRanks = ranks;
  int32_t tpb = 32;  // TensorRT-LLM's KvCacheConfig default
  if (llmArgs.contains("kv_cache_config") && llmArgs["kv_cache_config"].is_object() &&
      llmArgs["kv_cache_config"].contains("tokens_per_block")) {
    const json& v = llmArgs["kv_cache_config"]["tokens_per_block"];
    if (!v.is_number_integer() || v.get<int64_t>() < 1) {
      fail("llm_args.kv_cache_config.tokens_per_block", "expected a positive integer, found " + v.dump());
    }
    tpb = static_cast<int32_t>(v.get<int64_t>());
  }
  if (blockGiven && c.tokensPerBlock != tpb) {
    fail("tokens_per_block", std::to_string(c.tokensPerBlock) + " disagrees with llm_args.kv_cache_config.tokens_per_block (" +
                                 std::to_string(tpb) + ")");
  }
  c.tokensPerBlock = tpb;
  c.llmArgsJson = llmArgs.dump();
  return c;
}

std::string PyTorchConfig::toJson() const {
  json j;
  j["backend"] = "pytorch";
  j["instance_name"] = instanceName;
  j["python"] = python;
  j["libpython"] = libpython;
  j["host_library"] = hostLibrary;
  j["python_path"] = pythonPath;
  j["model"] = model;
  j["llm_args"] = json::parse(llmArgsJson);
  j["env"] = json::parse(envJson);
  j["num_ranks"] = numRanks;
  j["tokens_per_block"] = tokensPerBlock;
  j["stats_poll_interval_ms"] = statsPollMs;
  j["kv_cache_hash_algo"] = kvCacheHashAlgo;
  j["kv_events"] = {{"enabled", kvEventsEnabled}, {"poll_interval_ms", kvEventsPollMs},
                    {"max_buffered", kvEventsMaxBuffered}, {"rank_wait_ms", kvEventsRankWaitMs}};
  return j.dump();
}

}  // namespace affinity::pytorch
