// KvCacheManager: prefix reuse of full blocks, reference counts, prioritized LRU eviction (suffix
// before prefix), stored / removed / updated / created events, retention, and stats.
#include <cmath>
#include <optional>

#include "check.h"
#include "sim/hash.h"
#include "sim/kv_cache.h"

using namespace affinity;
using namespace affinity::sim;

namespace {

constexpr int32_t kTpb = 4;

/// A cache of one rank with tokens_per_block 4 whose events land in a vector.
struct Rig {
  std::vector<KvEvent> events;
  KvCacheManager kv;
  explicit Rig(int64_t cap, bool reuse = true)
      : kv(3, cap, kTpb, reuse, [this](KvEvent&& e) { events.push_back(std::move(e)); }) {}
  std::vector<KvEvent> take() {
    std::vector<KvEvent> e = std::move(events);
    events.clear();
    return e;
  }
  KvCacheStats stats() const {
    KvCacheStats s;
    kv.fillStats(s);
    return s;
  }
  void checkBalance() const {
    const KvCacheStats s = stats();
    CHECK_EQ(s.freeNumBlocks + s.usedNumBlocks + s.cachedNumBlocks, s.maxNumBlocks);
  }
};

std::vector<int32_t> toks(int32_t start, int32_t n) {
  std::vector<int32_t> t;
  for (int32_t i = 0; i < n; ++i) t.push_back(start + i);
  return t;
}

/// The chain over every full block of tokens (what the executor registers for computed KV).
std::vector<uint64_t> chain(const std::vector<int32_t>& t) {
  std::vector<uint64_t> h;
  for (size_t s = 0; s + kTpb <= t.size(); s += kTpb) {
    h.push_back(hashV1BlockKey(t.data() + s, kTpb, h.empty() ? 0 : h.back(), std::nullopt, std::nullopt));
  }
  return h;
}

/// Allocates totalBlocks blocks for tokens (reusing up to maxReuse) and stores the full blocks.
Sequence put(Rig& r, const std::vector<int32_t>& t, int32_t totalBlocks, int32_t maxReuse = 1 << 20,
             bool includeTokens = true) {
  Sequence s;
  const auto h = chain(t);
  CHECK(r.kv.allocate(s, h, maxReuse, totalBlocks));
  r.kv.store(s, h, t, includeTokens);
  return s;
}

bool isType(const KvEvent& e, KvEventType t) { return e.type == static_cast<int32_t>(t); }

/// Hashes of the removed events, in order (each must be a removed event).
std::vector<uint64_t> hashesOfRemoved(const std::vector<KvEvent>& ev) {
  std::vector<uint64_t> out;
  for (const auto& e : ev) {
    if (!isType(e, KvEventType::kRemoved)) throw check::Failure("expected only removed events");
    out.insert(out.end(), e.blockHashes.begin(), e.blockHashes.end());
  }
  return out;
}

}  // namespace

TEST(created_event_reports_capacity_and_window) {
  Rig r(10);
  r.kv.emitCreated(4096);
  const auto ev = r.take();
  CHECK_EQ(ev.size(), 1u);
  CHECK(isType(ev[0], KvEventType::kCreated));
  CHECK_EQ(ev[0].value, 10);
  CHECK_EQ(ev[0].rank, 3);
  CHECK_EQ(ev[0].windowSize, 4096);
  const KvCacheStats s = r.stats();
  CHECK_EQ(s.maxNumBlocks, 10);
  CHECK_EQ(s.freeNumBlocks, 10);
  CHECK_EQ(s.usedNumBlocks, 0);
  CHECK_EQ(s.cachedNumBlocks, 0);
  CHECK_EQ(s.tokensPerBlock, kTpb);
  CHECK_EQ(s.cacheHitRate, 0.0);
}

TEST(prefix_reuse_of_full_blocks_only) {
  Rig r(32);
  const auto a = toks(0, 12);  // 3 full blocks
  Sequence sa = put(r, a, 4);
  CHECK_EQ(sa.reusedBlocks, 0);
  CHECK_EQ(sa.blocks.size(), 4u);
  CHECK_EQ(sa.storedBlocks, 3);

  // Shares 6 tokens with a: one full block and half of the second; only the full block is reused.
  auto b = toks(0, 6);
  for (int32_t t : toks(100, 6)) b.push_back(t);
  const auto hb = chain(b);
  CHECK_EQ(r.kv.matchPrefix(hb, 10), 1);
  Sequence sb;
  CHECK(r.kv.allocate(sb, hb, 10, 4));
  CHECK_EQ(sb.reusedBlocks, 1);
  CHECK_EQ(sb.storedBlocks, 1);
  CHECK_EQ(sb.blocks[0], sa.blocks[0]);
  CHECK(sb.blocks[1] != sa.blocks[1]);

  // maxReuse limits the reused prefix even when more matches (the executor's last-token rule).
  const auto ha = chain(a);
  CHECK_EQ(r.kv.matchPrefix(ha, 10), 3);
  CHECK_EQ(r.kv.matchPrefix(ha, 2), 2);
  Sequence sc;
  CHECK(r.kv.allocate(sc, ha, 2, 4));
  CHECK_EQ(sc.reusedBlocks, 2);
  CHECK_EQ(sc.blocks[0], sa.blocks[0]);
  CHECK_EQ(sc.blocks[1], sa.blocks[1]);
  CHECK(sc.blocks[2] != sa.blocks[2]);

  // A different first block matches nothing even when later blocks are identical in content.
  auto d = toks(0, 12);
  d[0] = 999;
  CHECK_EQ(r.kv.matchPrefix(chain(d), 10), 0);

  // reused 0 + 1 + 2 = 3; missed (considered - reused) 3 + 2 + 0 = 5.
  const KvCacheStats s = r.stats();
  CHECK_EQ(s.reusedBlocks, 3);
  CHECK_EQ(s.missedBlocks, 5);
  CHECK(std::abs(s.cacheHitRate - 3.0 / 8.0) < 1e-12);
  CHECK_EQ(s.allocTotalBlocks, 12);
  CHECK_EQ(s.allocNewBlocks, 9);
  CHECK_EQ(s.usedNumBlocks, 9);
  CHECK_EQ(s.freeNumBlocks, 23);
  r.checkBalance();
}

TEST(reuse_disabled_neither_matches_nor_stores) {
  Rig r(16, false);
  const auto a = toks(0, 12);
  Sequence sa = put(r, a, 3);
  CHECK(r.take().empty());  // no stored event
  CHECK_EQ(r.kv.matchPrefix(chain(a), 10), 0);
  Sequence sb = put(r, a, 3);
  CHECK_EQ(sb.reusedBlocks, 0);
  r.kv.release(sa, true);
  r.kv.release(sb, true);
  CHECK(r.take().empty());
  const KvCacheStats s = r.stats();
  CHECK_EQ(s.freeNumBlocks, 16);
  CHECK_EQ(s.cachedNumBlocks, 0);
  CHECK_EQ(s.reusedBlocks, 0);
}

TEST(stored_events_carry_parent_hashes_and_tokens) {
  Rig r(32);
  const auto a = toks(10, 12);
  const auto ha = chain(a);
  Sequence sa = put(r, a, 3);
  auto ev = r.take();
  CHECK_EQ(ev.size(), 1u);
  CHECK(isType(ev[0], KvEventType::kStored));
  CHECK_EQ(ev[0].rank, 3);
  CHECK(!ev[0].hasParent);
  CHECK_EQ(ev[0].parentHash, 0u);
  CHECK(ev[0].blockHashes == ha);
  CHECK(ev[0].tokens == a);

  // An extension reuses two blocks and stores the rest, chained on the last reused block.
  auto b = toks(10, 8);
  for (int32_t t : toks(500, 8)) b.push_back(t);
  const auto hb = chain(b);
  Sequence sb;
  CHECK(r.kv.allocate(sb, hb, 10, 4));
  CHECK_EQ(sb.reusedBlocks, 2);
  r.kv.store(sb, hb, b, true);
  ev = r.take();
  CHECK_EQ(ev.size(), 1u);
  CHECK(isType(ev[0], KvEventType::kStored));
  CHECK(ev[0].hasParent);
  CHECK_EQ(ev[0].parentHash, ha[1]);
  CHECK((ev[0].blockHashes == std::vector<uint64_t>{hb[2], hb[3]}));
  CHECK(ev[0].tokens == std::vector<int32_t>(b.begin() + 8, b.end()));

  // Storing again registers nothing new: no event.
  r.kv.store(sb, hb, b, true);
  CHECK(r.take().empty());

  // Without tokens the event has hashes only.
  const auto c = toks(900, 8);
  Sequence sc = put(r, c, 2, 1 << 20, false);
  ev = r.take();
  CHECK_EQ(ev.size(), 1u);
  CHECK(ev[0].blockHashes == chain(c));
  CHECK(ev[0].tokens.empty());
}

TEST(incremental_store_continues_the_chain) {
  // Blocks are stored as they fill: the second store's event chains on the first's last block.
  Rig r(16);
  const auto t = toks(0, 16);
  const auto h = chain(t);
  Sequence s;
  CHECK(r.kv.allocate(s, h, 0, 4));
  const std::vector<uint64_t> first(h.begin(), h.begin() + 2);
  r.kv.store(s, first, t, true);
  r.kv.store(s, h, t, true);
  const auto ev = r.take();
  CHECK_EQ(ev.size(), 2u);
  CHECK(!ev[0].hasParent);
  CHECK(ev[0].blockHashes == first);
  CHECK(ev[1].hasParent);
  CHECK_EQ(ev[1].parentHash, h[1]);
  CHECK((ev[1].blockHashes == std::vector<uint64_t>{h[2], h[3]}));
  CHECK(ev[1].tokens == std::vector<int32_t>(t.begin() + 8, t.end()));
  CHECK_EQ(s.storedBlocks, 4);
}

TEST(duplicate_content_is_stored_once_and_private_copies_free_silently) {
  Rig r(32);
  const auto a = toks(0, 12);
  const auto ha = chain(a);
  // Both allocate before either stores: both miss, each computes its own copy.
  Sequence x, y;
  CHECK(r.kv.allocate(x, ha, 10, 3));
  CHECK(r.kv.allocate(y, ha, 10, 3));
  CHECK_EQ(y.reusedBlocks, 0);
  r.kv.store(x, ha, a, true);
  r.kv.store(y, ha, a, true);
  auto ev = r.take();
  CHECK_EQ(ev.size(), 1u);  // y's identical blocks are not registered again
  CHECK(ev[0].blockHashes == ha);
  r.kv.release(y, false);
  CHECK(r.take().empty());  // y's private copies were never registered: no removed event
  CHECK_EQ(r.kv.matchPrefix(ha, 10), 3);
  CHECK_EQ(r.stats().usedNumBlocks, 3);

  // A duplicate first block followed by new content: the new blocks chain on the duplicate's hash.
  auto b = toks(0, 4);
  for (int32_t t : toks(300, 8)) b.push_back(t);
  const auto hb = chain(b);
  Sequence z;
  CHECK(r.kv.allocate(z, hb, 0, 3));  // maxReuse 0: computes block 0 again
  r.kv.store(z, hb, b, true);
  ev = r.take();
  CHECK_EQ(ev.size(), 1u);
  CHECK(ev[0].hasParent);
  CHECK_EQ(ev[0].parentHash, ha[0]);
  CHECK((ev[0].blockHashes == std::vector<uint64_t>{hb[1], hb[2]}));
  r.checkBalance();
}

TEST(shared_blocks_stay_while_referenced) {
  Rig r(8);
  const auto a = toks(0, 12);
  const auto ha = chain(a);
  Sequence sa = put(r, a, 3);
  auto b = toks(0, 8);
  for (int32_t t : toks(40, 4)) b.push_back(t);
  const auto hb = chain(b);
  Sequence sb = put(r, b, 3);
  CHECK_EQ(sb.reusedBlocks, 2);
  r.take();
  CHECK_EQ(r.stats().usedNumBlocks, 4);

  // Releasing a (not kept) frees only its private block; the shared prefix stays for b.
  r.kv.release(sa, false);
  auto ev = r.take();
  CHECK_EQ(ev.size(), 1u);
  CHECK(isType(ev[0], KvEventType::kRemoved));
  CHECK((ev[0].blockHashes == std::vector<uint64_t>{ha[2]}));
  KvCacheStats s = r.stats();
  CHECK_EQ(s.usedNumBlocks, 3);
  CHECK_EQ(s.freeNumBlocks, 5);
  CHECK_EQ(r.kv.matchPrefix(ha, 10), 2);
  CHECK(!sa.allocated);
  CHECK(sa.blocks.empty());

  // Releasing b frees the rest; the removed event lists the chain deepest first.
  r.kv.release(sb, false);
  ev = r.take();
  CHECK_EQ(ev.size(), 1u);
  CHECK((ev[0].blockHashes == std::vector<uint64_t>{hb[2], ha[1], ha[0]}));
  s = r.stats();
  CHECK_EQ(s.usedNumBlocks, 0);
  CHECK_EQ(s.freeNumBlocks, 8);
  CHECK_EQ(s.cachedNumBlocks, 0);
  CHECK_EQ(r.kv.matchPrefix(ha, 10), 0);

  // Releasing twice is harmless.
  r.kv.release(sb, false);
  CHECK(r.take().empty());
  CHECK_EQ(r.stats().freeNumBlocks, 8);
}

TEST(kept_blocks_are_cached_and_reusable) {
  Rig r(8);
  const auto a = toks(0, 12);
  Sequence sa = put(r, a, 4);  // 3 stored + 1 reserved (unregistered)
  r.take();
  r.kv.release(sa, true);
  CHECK(r.take().empty());  // nothing removed: the unregistered reserve block is just freed
  KvCacheStats s = r.stats();
  CHECK_EQ(s.cachedNumBlocks, 3);
  CHECK_EQ(s.freeNumBlocks, 5);
  CHECK_EQ(s.usedNumBlocks, 0);
  CHECK_EQ(r.kv.availableBlocks(), 8);

  Sequence sb = put(r, a, 3);
  CHECK_EQ(sb.reusedBlocks, 3);
  s = r.stats();
  CHECK_EQ(s.cachedNumBlocks, 0);
  CHECK_EQ(s.usedNumBlocks, 3);
  CHECK_EQ(s.evictedBlocks, 0);
  r.checkBalance();
}

TEST(allocation_failure_changes_nothing) {
  Rig r(4);
  const auto a = toks(0, 12);
  Sequence sa = put(r, a, 3);
  r.take();
  const KvCacheStats before = r.stats();
  Sequence sb;
  CHECK(!r.kv.allocate(sb, chain(toks(50, 8)), 10, 2));  // needs 2, 1 available
  CHECK(!sb.allocated);
  CHECK(sb.blocks.empty());
  const KvCacheStats after = r.stats();
  CHECK_EQ(after.usedNumBlocks, before.usedNumBlocks);
  CHECK_EQ(after.freeNumBlocks, before.freeNumBlocks);
  CHECK_EQ(after.allocTotalBlocks, before.allocTotalBlocks);
  CHECK_EQ(after.missedBlocks, before.missedBlocks);
  CHECK(r.take().empty());

  // Reusing cached blocks does not count them as available for the fresh part.
  r.kv.release(sa, true);  // 3 cached, 1 free
  Sequence sc;
  CHECK(!r.kv.allocate(sc, chain(a), 10, 5));  // reuse 3 + 2 fresh, only 1 other block
  Sequence sd;
  CHECK(r.kv.allocate(sd, chain(a), 10, 4));  // reuse 3 + 1 fresh
  CHECK_EQ(sd.reusedBlocks, 3);
  CHECK(r.take().empty());  // the fresh block came from the free list: no eviction
  CHECK_EQ(r.stats().evictedBlocks, 0);
}

TEST(eviction_is_lru_and_suffix_before_prefix) {
  Rig r(6);
  const auto a = toks(0, 12), b = toks(100, 12);
  const auto ha = chain(a), hb = chain(b);
  Sequence sa = put(r, a, 3);
  r.kv.release(sa, true);
  Sequence sb = put(r, b, 3);
  r.kv.release(sb, true);
  // Touch a's first two blocks: they become more recent than b, a's leaf stays the oldest.
  Sequence sc;
  CHECK(r.kv.allocate(sc, ha, 2, 2));
  CHECK_EQ(sc.reusedBlocks, 2);
  r.kv.release(sc, true);
  r.take();
  CHECK_EQ(r.stats().cachedNumBlocks, 6);
  CHECK_EQ(r.stats().freeNumBlocks, 0);

  // Six fresh blocks evict everything, one removed event per eviction, in LRU order with the
  // deeper block first among blocks of the same age.
  Sequence sd;
  CHECK(r.kv.allocate(sd, chain(toks(1000, 24)), 0, 6));
  const auto ev = r.take();
  std::vector<uint64_t> order;
  for (const auto& e : ev) {
    CHECK(isType(e, KvEventType::kRemoved));
    CHECK_EQ(e.blockHashes.size(), 1u);
    order.push_back(e.blockHashes[0]);
  }
  CHECK((order == std::vector<uint64_t>{ha[2], hb[2], hb[1], hb[0], ha[1], ha[0]}));
  const KvCacheStats s = r.stats();
  CHECK_EQ(s.evictedBlocks, 6);
  CHECK_EQ(s.usedNumBlocks, 6);
  CHECK_EQ(s.cachedNumBlocks, 0);
  CHECK_EQ(r.kv.matchPrefix(ha, 10), 0);
  CHECK_EQ(r.kv.matchPrefix(hb, 10), 0);
}

TEST(partial_eviction_keeps_the_prefix_usable) {
  Rig r(4);
  const auto a = toks(0, 12);
  const auto ha = chain(a);
  Sequence sa = put(r, a, 3);
  r.kv.release(sa, true);  // 3 cached + 1 free
  r.take();
  Sequence sb;
  CHECK(r.kv.allocate(sb, chain(toks(70, 8)), 0, 2));  // 1 free + evicts a's leaf only
  const auto ev = r.take();
  CHECK_EQ(ev.size(), 1u);
  CHECK((ev[0].blockHashes == std::vector<uint64_t>{ha[2]}));
  CHECK_EQ(r.kv.matchPrefix(ha, 10), 2);  // the root and middle block are still reusable
}

TEST(retained_blocks_are_evicted_last) {
  Rig r(6);
  const auto a = toks(0, 12), b = toks(100, 12);
  const auto ha = chain(a), hb = chain(b);
  Sequence sa = put(r, a, 3);
  r.kv.release(sa, true);
  Sequence sb = put(r, b, 3);
  r.kv.release(sb, true);
  r.take();
  // Retain a's (older) blocks by id: they now outlive b's.
  std::vector<int32_t> aIds;
  {
    Sequence probe;
    CHECK(r.kv.allocate(probe, ha, 3, 3));
    aIds = probe.blocks;
    r.kv.release(probe, true);  // a is now newer; re-age b above it by touching b
    Sequence touchB;
    CHECK(r.kv.allocate(touchB, hb, 3, 3));
    r.kv.release(touchB, true);
  }
  r.take();
  r.kv.retain(aIds);
  auto ev = r.take();
  CHECK_EQ(ev.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(isType(ev[i], KvEventType::kUpdated));
    CHECK_EQ(ev[i].value, kRetainedPriority);
    CHECK((ev[i].blockHashes == std::vector<uint64_t>{ha[i]}));
  }
  // a is older than b, yet b goes first because a is retained.
  Sequence sd;
  CHECK(r.kv.allocate(sd, chain(toks(1000, 12)), 0, 3));
  CHECK((hashesOfRemoved(r.take()) == std::vector<uint64_t>{hb[2], hb[1], hb[0]}));
  Sequence se;
  CHECK(r.kv.allocate(se, chain(toks(2000, 12)), 0, 3));
  CHECK((hashesOfRemoved(r.take()) == std::vector<uint64_t>{ha[2], ha[1], ha[0]}));
}

TEST(retain_then_unretain_drops_unreferenced_blocks) {
  Rig r(8);
  const auto a = toks(0, 12);
  const auto ha = chain(a);
  Sequence sa = put(r, a, 4);  // 3 registered + 1 reserve
  r.take();
  const auto ids = r.kv.retain(sa.blocks);  // the unregistered reserve block is skipped
  CHECK_EQ(ids.size(), 3u);
  auto ev = r.take();
  CHECK_EQ(ev.size(), 3u);
  for (const auto& e : ev) {
    CHECK(isType(e, KvEventType::kUpdated));
    CHECK_EQ(e.value, kRetainedPriority);
    CHECK_EQ(e.rank, 3);
  }
  // Released without keep (per_request / per_conversation), retained blocks stay cached.
  r.kv.release(sa, false);
  CHECK(r.take().empty());
  KvCacheStats s = r.stats();
  CHECK_EQ(s.cachedNumBlocks, 3);
  CHECK_EQ(s.freeNumBlocks, 5);
  CHECK_EQ(r.kv.matchPrefix(ha, 10), 3);

  // Unretained and unreferenced: dropped at once, deepest first, one removed event.
  r.kv.unretain(ids);
  ev = r.take();
  CHECK_EQ(ev.size(), 1u);
  CHECK(isType(ev[0], KvEventType::kRemoved));
  CHECK((ev[0].blockHashes == std::vector<uint64_t>{ha[2], ha[1], ha[0]}));
  s = r.stats();
  CHECK_EQ(s.cachedNumBlocks, 0);
  CHECK_EQ(s.freeNumBlocks, 8);
  CHECK_EQ(s.evictedBlocks, 0);  // dropping is not eviction
  CHECK_EQ(r.kv.matchPrefix(ha, 10), 0);

  // Unretaining blocks that are not retained is a no-op.
  r.kv.unretain(ids);
  CHECK(r.take().empty());
}

TEST(unretain_of_referenced_blocks_restores_priority) {
  Rig r(8);
  const auto a = toks(0, 8);
  const auto ha = chain(a);
  Sequence sa = put(r, a, 2);
  r.take();
  const auto h1 = r.kv.retain(sa.blocks);
  const auto h2 = r.kv.retain(sa.blocks);  // a second retain: no new event (count 2)
  auto ev = r.take();
  CHECK_EQ(ev.size(), 2u);
  r.kv.unretain(h1);  // count 1: nothing
  CHECK(r.take().empty());
  r.kv.unretain(h2);  // count 0 while referenced: priority back to default
  ev = r.take();
  CHECK_EQ(ev.size(), 2u);
  for (const auto& e : ev) {
    CHECK(isType(e, KvEventType::kUpdated));
    CHECK_EQ(e.value, kDefaultPriority);
  }
  CHECK_EQ(r.stats().usedNumBlocks, 2);
  // No longer retained: a release without keep frees them.
  r.kv.release(sa, false);
  CHECK((hashesOfRemoved(r.take()) == std::vector<uint64_t>{ha[1], ha[0]}));
  CHECK_EQ(r.stats().freeNumBlocks, 8);
}

TEST(retained_block_shared_by_a_live_sequence_survives_unretain_until_release) {
  Rig r(8);
  const auto a = toks(0, 8);
  const auto ha = chain(a);
  Sequence sa = put(r, a, 2);
  const auto ids = r.kv.retain(sa.blocks);
  r.kv.release(sa, false);
  Sequence sb = put(r, a, 2);  // next turn reuses the retained blocks
  CHECK_EQ(sb.reusedBlocks, 2);
  r.take();
  r.kv.unretain(ids);  // the previous turn's record is released while sb still uses the blocks
  auto ev = r.take();
  CHECK_EQ(ev.size(), 2u);
  CHECK(isType(ev[0], KvEventType::kUpdated));
  CHECK_EQ(r.kv.matchPrefix(ha, 10), 2);
  r.kv.release(sb, true);  // kept (all_reusable): cached at default priority
  CHECK(r.take().empty());
  CHECK_EQ(r.stats().cachedNumBlocks, 2);
}

TEST(stats_counters_track_every_operation) {
  Rig r(10);
  const auto a = toks(0, 16);  // 4 blocks
  Sequence s1 = put(r, a, 5);  // considered 4, reused 0
  r.kv.release(s1, true);
  Sequence s2 = put(r, a, 5, 3);  // considered 3, reused 3
  r.kv.release(s2, true);
  Sequence s3 = put(r, toks(50, 8), 2);  // considered 2, reused 0
  const KvCacheStats s = r.stats();
  CHECK_EQ(s.reusedBlocks, 3);
  CHECK_EQ(s.missedBlocks, 6);
  CHECK(std::abs(s.cacheHitRate - 3.0 / 9.0) < 1e-12);
  CHECK_EQ(s.allocTotalBlocks, 12);
  CHECK_EQ(s.allocNewBlocks, 9);
  CHECK_EQ(s.usedNumBlocks, 2);
  CHECK_EQ(s.cachedNumBlocks, 4);
  CHECK_EQ(s.freeNumBlocks, 4);
  CHECK_EQ(r.kv.usedBlocks(), 2);
  CHECK_EQ(s.evictedBlocks, 0);
  r.checkBalance();
  (void)s3;
}

TEST(stale_retention_handles_are_ignored_after_eviction) {
  // A retained block evicted under pressure and registered again for another sequence: the old
  // handle must not release the new owner's retention.
  Rig r(4);
  const auto a = toks(0, 8), b = toks(100, 16);
  const auto ha = chain(a), hb = chain(b);
  Sequence sa = put(r, a, 2);
  const auto oldHandles = r.kv.retain(sa.blocks);
  r.kv.release(sa, false);  // retained: cached
  Sequence sb = put(r, b, 4);  // 2 free + evicts both of a's blocks
  CHECK_EQ(r.stats().evictedBlocks, 2);
  const auto newHandles = r.kv.retain(sb.blocks);
  CHECK_EQ(newHandles.size(), 4u);
  r.kv.release(sb, false);
  r.take();
  r.kv.unretain(oldHandles);  // the ids now belong to b's registrations
  CHECK(r.take().empty());
  CHECK_EQ(r.stats().cachedNumBlocks, 4);
  CHECK_EQ(r.kv.matchPrefix(hb, 10), 4);
  r.kv.unretain(newHandles);
  CHECK((hashesOfRemoved(r.take()) == std::vector<uint64_t>{hb[3], hb[2], hb[1], hb[0]}));
  (void)ha;
}

TEST(registered_block_lookup) {
  Rig r(8);
  const auto a = toks(0, 8);
  const auto ha = chain(a);
  CHECK_EQ(r.kv.registeredBlock(ha[0]), -1);
  Sequence sa = put(r, a, 3);
  CHECK_EQ(r.kv.registeredBlock(ha[0]), sa.blocks[0]);
  CHECK_EQ(r.kv.registeredBlock(ha[1]), sa.blocks[1]);
  r.kv.release(sa, false);
  CHECK_EQ(r.kv.registeredBlock(ha[0]), -1);
}

// ---------------------------------------------------------------------------------------------
// KvCacheRetentionConfig (TensorRT-LLM's claimBlock / releaseBlock / refresh)

namespace {
std::vector<BlockRetention> every(int32_t n, int32_t priority, int64_t durationUs) {
  return std::vector<BlockRetention>(static_cast<size_t>(n), BlockRetention{priority, durationUs});
}
}  // namespace

TEST(retention_priority_keeps_blocks_over_lru_until_its_duration_ends) {
  Rig r(6);
  const auto a = toks(0, 12), b = toks(100, 12);
  const auto ha = chain(a), hb = chain(b);
  Sequence sa;
  CHECK(r.kv.allocate(sa, ha, 0, 3, every(3, 80, 1000)));  // priority 80 for 1 ms once released
  r.kv.store(sa, ha, a, false);
  r.kv.release(sa, true, 10'000);
  Sequence sb = put(r, b, 3);
  r.kv.release(sb, true, 10'000);
  r.take();
  CHECK_EQ(r.kv.priorityOf(ha[0]), 80);
  CHECK_EQ(r.kv.nextExpiryUs(), 11'000);
  // within the duration: a is older, yet b is evicted first
  r.kv.refresh(10'999);
  Sequence sc;
  CHECK(r.kv.allocate(sc, chain(toks(1000, 12)), 0, 3));
  CHECK((hashesOfRemoved(r.take()) == std::vector<uint64_t>{hb[2], hb[1], hb[0]}));
  r.kv.release(sc, true, 10'999);
  // the duration over: a's priority reverts (an "updated" event each) and LRU takes it
  r.kv.refresh(11'000);
  const auto ev = r.take();
  CHECK_EQ(ev.size(), 3u);
  for (const auto& e : ev) {
    CHECK(isType(e, KvEventType::kUpdated));
    CHECK_EQ(e.value, kDefaultPriority);
  }
  CHECK_EQ(r.kv.priorityOf(ha[1]), kDefaultPriority);
  CHECK_EQ(r.kv.nextExpiryUs(), kNone);
  Sequence sd;  // 3 free blocks (c's were never stored) and a's 3
  CHECK(r.kv.allocate(sd, chain(toks(2000, 24)), 0, 6));
  CHECK((hashesOfRemoved(r.take()) == std::vector<uint64_t>{ha[2], ha[1], ha[0]}));
}

TEST(retention_timer_starts_when_the_block_is_released) {
  Rig r(4);
  const auto a = toks(0, 8);
  const auto ha = chain(a);
  Sequence sa;
  CHECK(r.kv.allocate(sa, ha, 0, 2, every(2, 60, 500)));
  r.kv.store(sa, ha, a, false);
  r.kv.refresh(1'000'000);  // long after allocation, but in use: nothing reverts
  CHECK_EQ(r.kv.priorityOf(ha[0]), 60);
  CHECK_EQ(r.kv.nextExpiryUs(), kNone);
  r.kv.release(sa, true, 2'000'000);
  CHECK_EQ(r.kv.nextExpiryUs(), 2'000'500);
  r.kv.refresh(2'000'499);
  CHECK_EQ(r.kv.priorityOf(ha[0]), 60);
  r.kv.refresh(2'000'500);
  CHECK_EQ(r.kv.priorityOf(ha[0]), kDefaultPriority);
}

TEST(a_claim_sets_the_requests_priority_and_always_its_duration) {
  Rig r(4);
  const auto a = toks(0, 8);
  const auto ha = chain(a);
  Sequence sa;
  CHECK(r.kv.allocate(sa, ha, 0, 2, every(2, 70, 100)));
  r.kv.store(sa, ha, a, false);
  r.kv.release(sa, true, 0);
  CHECK_EQ(r.kv.nextExpiryUs(), 100);
  // reused before it expires by a request that names a priority: its priority, its duration, the expiry off
  Sequence sb;
  CHECK(r.kv.allocate(sb, ha, 2, 2, every(2, 90, 5'000)));
  CHECK_EQ(r.kv.priorityOf(ha[0]), 90);
  r.kv.refresh(200);  // the stale expiry of the first release is ignored
  CHECK_EQ(r.kv.priorityOf(ha[0]), 90);
  r.kv.release(sb, true, 300);
  CHECK_EQ(r.kv.nextExpiryUs(), 5'300);
  // reused by a request without a config: the priority stays, the duration is cleared, so it never reverts
  Sequence sc;
  CHECK(r.kv.allocate(sc, ha, 2, 2));
  r.kv.release(sc, true, 400);
  r.kv.refresh(1'000'000);
  CHECK_EQ(r.kv.priorityOf(ha[0]), 90);
  // an explicit default priority puts it back
  Sequence sd;
  CHECK(r.kv.allocate(sd, ha, 2, 2, every(2, kDefaultPriority, kNone)));
  r.kv.release(sd, true, 500);
  CHECK_EQ(r.kv.priorityOf(ha[1]), kDefaultPriority);
}

TEST(a_block_in_use_when_its_time_comes_keeps_its_priority) {
  Rig r(4);
  const auto a = toks(0, 8);
  const auto ha = chain(a);
  Sequence sa;
  CHECK(r.kv.allocate(sa, ha, 0, 2, every(2, 80, 100)));
  r.kv.store(sa, ha, a, false);
  r.kv.release(sa, true, 0);
  Sequence sb;  // claims it again with a priority of its own but no duration, and holds it past the expiry
  CHECK(r.kv.allocate(sb, ha, 2, 2, every(2, 80, kNone)));
  r.kv.refresh(1'000);
  CHECK_EQ(r.kv.priorityOf(ha[0]), 80);
  r.kv.release(sb, true, 2'000);
  r.kv.refresh(10'000);
  CHECK_EQ(r.kv.priorityOf(ha[0]), 80);  // no duration: held for good (until a claim changes it)
}

