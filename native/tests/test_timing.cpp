// The timing model against the published anchor figures its presets are derived from
// (docs/timing-model.md), and the executor's iterations against the model (virtual clock).
#include <cmath>
#include <string>

#include "check.h"
#include "sim/config.h"
#include "sim/timing.h"
#include "sim_util.h"

using namespace affinity;
using namespace affinity::sim;
using namespace testutil;

namespace {

void near(double got, double want, double rel, const char* what) {
  if (!(std::abs(got - want) <= rel * std::abs(want))) {
    throw check::Failure(std::string(what) + ": got " + std::to_string(got) + ", want " + std::to_string(want) +
                         " within " + std::to_string(rel * 100) + "%");
  }
}

TimingModel model(const std::string& preset) { return TimingModel(timingPreset(preset)); }

int64_t ceilUs(double us) { return static_cast<int64_t>(std::ceil(us)); }

}  // namespace

TEST(llama_8k_prefill_is_about_0_32_s) {
  // Mooncake's prefill cost (eq. 1) for Llama-3-70B BF16 on 8xH100 at MFU 0.45: 8k-token prompt ~0.32 s.
  const TimingModel m = model("llama3-70b-h100-tp8");
  near(m.prefillPromptUs(8192), 320000, 0.15, "llama 8k prefill (us)");
  // ~25k tok/s per 8-GPU instance.
  near(8192 / (m.prefillPromptUs(8192) * 1e-6), 25000, 0.15, "llama prefill tok/s");
}

TEST(llama_decode_64_seqs_8k_ctx_is_about_11_ms) {
  // Decode roofline: 8.75 GB weights + 64 x 8,192 x 40 KiB KV per GPU at 80% of 3.35 TB/s ~11 ms.
  const TimingModel m = model("llama3-70b-h100-tp8");
  near(m.decodeUs(64, 64 * 8192), 11000, 0.15, "llama decode term (us)");
  // The memory-bound part alone is the roofline figure: 30.2 GB / 2.68 TB/s.
  const TimingParams& p = m.params();
  near(p.decodeBaseUs + p.decodeUsPerKvToken * 64 * 8192, 30.2e9 / (0.8 * 3.35e12) * 1e6, 0.02, "llama roofline");
  CHECK_EQ(m.decodeUs(0, 123456), 0.0);  // no decode work: no decode cost
}

TEST(deepseek_h100_prefill_throughput_per_node) {
  // SGLang's published DeepSeek-V3 prefill on H100 (EP32), 16,384 tokens per device per batch:
  // 57,674 tok/s per 8-GPU node at 1K prompts, 50,302 at 4K.
  const TimingModel m = model("deepseek-v3-h100-dp");
  auto nodeTokPerS = [&](int64_t prompt) {
    const int64_t perBatch = 16384 / prompt;
    const double us = m.iterationUs(static_cast<double>(perBatch) * m.prefillChunkUs(0, prompt));
    return 8.0 * 16384.0 / (us * 1e-6);
  };
  near(nodeTokPerS(1024), 57674, 0.15, "deepseek h100 1K prefill tok/s/node");
  near(nodeTokPerS(4096), 50302, 0.15, "deepseek h100 4K prefill tok/s/node");
  CHECK(nodeTokPerS(4096) < nodeTokPerS(1024));  // the attention term costs longer prompts more
}

TEST(deepseek_h100_decode_step_is_about_92_ms) {
  // SGLang's published DeepSeek-V3 decode on H100 (EP72): 22,282 tok/s/node at batch 256 per GPU and
  // KV length 2,000 -> step ~92 ms.
  const TimingModel m = model("deepseek-v3-h100-dp");
  const double step = m.iterationUs(m.decodeUs(256, 256 * 2000));
  near(step, 92000, 0.15, "deepseek h100 decode step (us)");
  near(8 * 256 / (step * 1e-6), 22282, 0.15, "deepseek h100 decode tok/s/node");
}

TEST(deepseek_gb200_anchors) {
  // SGLang's published DeepSeek-V3 on GB200 NVL72: 26,156 input tok/s/GPU at 2k; decode 13,386 tok/s/GPU
  // at batch 1,408.
  const TimingModel m = model("deepseek-v3-gb200-dp");
  near(2048 / (m.prefillPromptUs(2048) * 1e-6), 26156, 0.15, "gb200 2k prefill tok/s/GPU");
  const double step = m.iterationUs(m.decodeUs(1408, 1408LL * 2048));
  near(step, 105000, 0.15, "gb200 decode step (us)");
  near(1408 / (step * 1e-6), 13386, 0.15, "gb200 decode tok/s/GPU");
}

TEST(every_preset_has_positive_parameters) {
  for (const std::string name : {"llama3-70b-h100-tp8", "deepseek-v3-h100-dp", "deepseek-v3-gb200-dp"}) {
    const TimingParams p = timingPreset(name);
    CHECK_EQ(p.preset, name);
    CHECK(p.iterationOverheadUs > 0);
    CHECK(p.prefillUsPerToken > 0);
    CHECK(p.prefillUsPerTokenSq > 0);
    CHECK(p.decodeBaseUs > 0);
    CHECK(p.decodeUsPerSeq > 0);
    CHECK(p.decodeUsPerKvToken > 0);
    CHECK(p.kvBytesPerToken > 0);
    CHECK(p.transferBandwidthBytesPerS > 0);
  }
}

TEST(quadratic_term_grows_with_context) {
  const TimingModel m = model("llama3-70b-h100-tp8");
  // The same chunk costs more after a longer done prefix.
  CHECK(m.prefillChunkUs(0, 1024) < m.prefillChunkUs(8192, 1024));
  CHECK(m.prefillChunkUs(8192, 1024) < m.prefillChunkUs(65536, 1024));
  // Super-linear in prompt length.
  CHECK(m.prefillChunkUs(0, 16384) > 2 * m.prefillChunkUs(0, 8192));
  // Chunking does not change the total: (p+c)^2 - p^2 telescopes.
  near(m.prefillChunkUs(0, 3000) + m.prefillChunkUs(3000, 5192), m.prefillChunkUs(0, 8192), 1e-9, "chunk sum");
  // Exact form: L*c + Q*((p+c)^2 - p^2).
  const TimingParams& p = m.params();
  near(m.prefillChunkUs(1000, 500), p.prefillUsPerToken * 500 + p.prefillUsPerTokenSq * (1500.0 * 1500 - 1000.0 * 1000),
       1e-12, "chunk formula");
  // Mooncake: the quadratic term adds ~18% at 8k for Llama-3-70B.
  near(p.prefillUsPerTokenSq * 8192.0 * 8192 / (p.prefillUsPerToken * 8192), 0.18, 0.1, "attention share at 8k");
}

TEST(transfer_time_is_latency_plus_bytes_over_bandwidth) {
  for (const std::string name : {"llama3-70b-h100-tp8", "deepseek-v3-h100-dp", "deepseek-v3-gb200-dp"}) {
    const TimingModel m = model(name);
    const TimingParams& p = m.params();
    CHECK_EQ(m.transferUs(0), p.transferLatencyUs);
    near(m.transferUs(10000), p.transferLatencyUs + 10000 * p.kvBytesPerToken / p.transferBandwidthBytesPerS * 1e6,
         1e-12, "transfer formula");
    near(m.transferUs(20000) - m.transferUs(10000), m.transferUs(10000) - m.transferUs(0), 1e-9, "linear");
  }
  // KV of 10k tokens of Llama-3-70B BF16 (320 KiB/token) = 3.3 GB, ~66 ms at 50 GB/s.
  const TimingModel m = model("llama3-70b-h100-tp8");
  near(m.transferUs(10000) - m.params().transferLatencyUs, 66000, 0.15, "llama 10k transfer (us)");
}

TEST(iteration_is_overhead_plus_slowest_rank) {
  const TimingModel m = model("llama3-70b-h100-tp8");
  CHECK_EQ(m.iterationUs(0), m.params().iterationOverheadUs);
  CHECK_EQ(m.iterationUs(1234.5), m.params().iterationOverheadUs + 1234.5);
}

TEST(executor_8k_prefill_ends_at_model_time) {
  auto e = make(R"({"preset":"llama3-70b-h100-tp8","clock":{"mode":"virtual"}})");
  const TimingModel m = model("llama3-70b-h100-tp8");
  const int64_t id = e->enqueue(spec(seqTokens(1, 8192), 1, 7));
  const int64_t end = e->nextIterationEndUs();
  CHECK_EQ(end, ceilUs(m.prefillPromptUs(8192)));
  near(static_cast<double>(end), 320000, 0.15, "executor 8k prefill end (us)");
  e->advanceTo(end);
  const Response r = finalOf(take(*e), id);
  CHECK_EQ(r.metrics.firstTokenUs, end);
  CHECK_EQ(r.metrics.finishUs, end);
  CHECK_EQ(r.metrics.arrivalUs, 0);
  CHECK_EQ(r.metrics.scheduledUs, 0);
  IterationStats st;
  e->getIterationStats(st);
  CHECK_EQ(st.iterations, 1);
  CHECK_EQ(st.lastIterationStartUs, 0);
  CHECK_EQ(st.lastIterationDurationUs, end);
  CHECK_EQ(st.lastContextTokens, 8192);
  CHECK_EQ(st.lastContextRequests, 1);
  CHECK_EQ(st.busyUs, end);
  CHECK_EQ(e->nextIterationEndUs(), -1);
}

TEST(executor_decode_steps_follow_the_model) {
  auto e = make(R"({"preset":"llama3-70b-h100-tp8","clock":{"mode":"virtual"}})");
  const TimingModel m = model("llama3-70b-h100-tp8");
  const int64_t id = e->enqueue(spec(seqTokens(1, 8192), 3));
  runIdle(*e);
  const Response r = finalOf(take(*e), id);
  const int64_t t1 = ceilUs(m.prefillPromptUs(8192));
  // Each decode step reads the KV of every token fed so far (prompt + outputs).
  const int64_t t2 = t1 + ceilUs(m.iterationUs(m.decodeUs(1, 8193)));
  const int64_t t3 = t2 + ceilUs(m.iterationUs(m.decodeUs(1, 8194)));
  CHECK_EQ(r.metrics.firstTokenUs, t1);
  CHECK_EQ(r.metrics.finishUs, t3);
  CHECK_EQ(r.metrics.outputTokens, 3);
}

TEST(executor_iteration_takes_the_slowest_rank) {
  // Two ranks prefill 8k and 2k prompts in the same iteration: both end when the 8k one does.
  auto e = make(R"({"num_ranks":2,"preset":"llama3-70b-h100-tp8","clock":{"mode":"virtual"}})");
  const TimingModel m = model("llama3-70b-h100-tp8");
  RequestSpec a = spec(seqTokens(1, 8192), 1), b = spec(seqTokens(50000, 2048), 1);
  a.setAdpRankHint(0, false);
  b.setAdpRankHint(1, false);
  const int64_t ia = e->enqueue(a), ib = e->enqueue(b);
  const auto rs = runAll(*e);
  const int64_t want = ceilUs(m.prefillPromptUs(8192));
  CHECK_EQ(finalOf(rs, ia).metrics.finishUs, want);
  CHECK_EQ(finalOf(rs, ib).metrics.finishUs, want);
  CHECK_EQ(finalOf(rs, ia).metrics.rank, 0);
  CHECK_EQ(finalOf(rs, ib).metrics.rank, 1);
}

TEST(executor_chunked_prefill_time_adds_up) {
  auto e = make(R"({"max_num_tokens":8192,"kv_blocks_per_rank":2048,"clock":{"mode":"virtual"}})");
  const TimingModel m = model("llama3-70b-h100-tp8");
  const int64_t id = e->enqueue(spec(seqTokens(1, 16384), 1));
  CHECK_EQ(runIdle(*e), 2);
  const int64_t want = ceilUs(m.iterationUs(m.prefillChunkUs(0, 8192))) + ceilUs(m.iterationUs(m.prefillChunkUs(8192, 8192)));
  CHECK_EQ(finalOf(take(*e), id).metrics.finishUs, want);
}

TEST(executor_timing_override_and_other_preset) {
  auto e = make(R"({"preset":"deepseek-v3-h100-dp","timing":{"iteration_overhead_us":0},"clock":{"mode":"virtual"}})");
  TimingParams p = timingPreset("deepseek-v3-h100-dp");
  p.iterationOverheadUs = 0;
  const TimingModel m(p);
  const int64_t id = e->enqueue(spec(seqTokens(1, 1024), 1));
  runIdle(*e);
  CHECK_EQ(finalOf(take(*e), id).metrics.finishUs, ceilUs(m.prefillChunkUs(0, 1024)));
}

TEST(executor_iterations_follow_exact_integer_costs) {
  // Round costs make every term visible: overhead 100, prefill 1/token, decode 1000 + 10/seq +
  // 1 per KV token read (prompt and output so far).
  auto e = make(R"({"clock":{"mode":"virtual"},"tokens_per_block":8,"timing":{"iteration_overhead_us":100,
      "prefill_us_per_token":1,"prefill_us_per_token_sq":0,"decode_base_us":1000,"decode_us_per_seq":10,
      "decode_us_per_kv_token":1}})");
  const int64_t a = e->enqueue(spec(seqTokens(1, 100), 3));
  const int64_t b = e->enqueue(spec(seqTokens(1000, 100), 3));
  std::vector<int64_t> durations;
  while (step(*e)) {
    IterationStats st;
    e->getIterationStats(st);
    durations.push_back(st.lastIterationDurationUs);
  }
  // prefill 2 x 100; decode 2 seqs reading 101 + 101, then 102 + 102 tokens.
  CHECK((durations == std::vector<int64_t>{300, 100 + 1000 + 20 + 202, 100 + 1000 + 20 + 204}));
  const auto rs = take(*e);
  CHECK_EQ(finalOf(rs, a).metrics.firstTokenUs, 300);
  CHECK_EQ(finalOf(rs, a).metrics.finishUs, 300 + 1322 + 1324);
  CHECK_EQ(finalOf(rs, b).metrics.finishUs, 300 + 1322 + 1324);
  IterationStats st;
  e->getIterationStats(st);
  CHECK_EQ(st.busyUs, 300 + 1322 + 1324);
  CHECK_EQ(st.iterations, 3);
  CHECK_EQ(st.totalGeneratedTokens, 6);
  CHECK_EQ(st.totalPromptTokens, 200);

  // A cached prefix is not computed again: 40 of 41 tokens reused -> prefill of 1 token.
  const int64_t c = e->enqueue(spec(concat(seqTokens(1, 40), {7}), 1));
  const int64_t t = e->nowUs();
  runIdle(*e);
  const Response rc = finalOf(take(*e), c);
  CHECK_EQ(rc.metrics.reusedTokens, 40);
  CHECK_EQ(rc.metrics.finishUs - t, 100 + 1);
}
