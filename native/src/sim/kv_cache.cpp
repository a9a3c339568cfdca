#include "kv_cache.h"

#include <algorithm>

namespace affinity::sim {

KvCacheManager::KvCacheManager(int32_t rank, int64_t capacityBlocks, int32_t tokensPerBlock,
                               bool reuseEnabled, EventSink sink)
    : rank_(rank), tpb_(tokensPerBlock), reuseEnabled_(reuseEnabled), sink_(std::move(sink)) {
  blocks_.resize(static_cast<size_t>(capacityBlocks));
  free_.reserve(blocks_.size());
  // Hand out low ids first (pop_back).
  for (int64_t i = capacityBlocks - 1; i >= 0; --i) free_.push_back(static_cast<int32_t>(i));
}

void KvCacheManager::emitCreated(int32_t windowSize) {
  KvEvent e;
  e.type = static_cast<int32_t>(KvEventType::kCreated);
  e.rank = rank_;
  e.windowSize = windowSize;
  e.value = capacity();
  sink_(std::move(e));
}

KvCacheManager::EvictKey KvCacheManager::evictKey(int32_t id) const {
  const Block& b = blocks_[static_cast<size_t>(id)];
  return {b.priority, b.lastUsed, -b.depth, id};
}

int32_t KvCacheManager::matchPrefix(const std::vector<uint64_t>& hashes, int32_t maxBlocks) const {
  if (!reuseEnabled_) return 0;
  const int32_t n = std::min<int32_t>(static_cast<int32_t>(hashes.size()), maxBlocks);
  int32_t i = 0;
  for (; i < n; ++i) {
    if (byHash_.find(hashes[static_cast<size_t>(i)]) == byHash_.end()) break;
  }
  return i;
}

int32_t KvCacheManager::takeBlock() {
  if (!free_.empty()) {
    const int32_t id = free_.back();
    free_.pop_back();
    return id;
  }
  if (evictable_.empty()) return -1;
  const auto it = evictable_.begin();
  const int32_t id = std::get<3>(*it);
  evictable_.erase(it);
  std::vector<uint64_t> removed;
  unregister(id, removed);
  emitRemoved(removed);
  ++evicted_;
  return id;
}

bool KvCacheManager::allocate(Sequence& seq, const std::vector<uint64_t>& fullHashes, int32_t maxReuse,
                              int32_t totalBlocks, const std::vector<BlockRetention>& retention) {
  const int32_t considered = std::min<int32_t>(static_cast<int32_t>(fullHashes.size()), maxReuse);
  const int32_t reuse = std::min(matchPrefix(fullHashes, maxReuse), totalBlocks);
  // Blocks of the matched prefix that sit in the evictable set stop being available once reused.
  int64_t reusedFromEvictable = 0;
  for (int32_t i = 0; i < reuse; ++i) {
    const int32_t id = byHash_.at(fullHashes[static_cast<size_t>(i)]);
    if (blocks_[static_cast<size_t>(id)].refCount == 0) ++reusedFromEvictable;
  }
  const int64_t fresh = totalBlocks - reuse;
  if (availableBlocks() - reusedFromEvictable < fresh) return false;

  seq.blocks.clear();
  seq.blocks.reserve(static_cast<size_t>(totalBlocks));
  ++tick_;
  auto retentionOf = [&](size_t i) { return i < retention.size() ? retention[i] : BlockRetention{}; };
  for (int32_t i = 0; i < reuse; ++i) {
    const int32_t id = byHash_.at(fullHashes[static_cast<size_t>(i)]);
    Block& b = blocks_[static_cast<size_t>(id)];
    if (b.refCount == 0) {
      evictable_.erase(evictKey(id));
      ++used_;
    }
    ++b.refCount;
    b.lastUsed = tick_;
    // claimed: its expiry is off, the request's priority (when it gives one) and duration apply
    const BlockRetention r = retentionOf(static_cast<size_t>(i));
    b.expiresUs = kNone;
    b.durationUs = r.durationUs;
    if (r.priority != kNone && b.retainCount == 0) setPriority(id, r.priority);
    seq.blocks.push_back(id);
  }
  for (int64_t i = 0; i < fresh; ++i) {
    const int32_t id = takeBlock();  // cannot fail: checked above
    Block& b = blocks_[static_cast<size_t>(id)];
    b = Block{};
    b.refCount = 1;
    b.lastUsed = tick_;
    b.depth = static_cast<int32_t>(seq.blocks.size());
    const BlockRetention r = retentionOf(seq.blocks.size());
    b.priority = r.priority != kNone ? r.priority : kDefaultPriority;
    b.durationUs = r.durationUs;
    ++used_;
    seq.blocks.push_back(id);
  }
  seq.reusedBlocks = reuse;
  seq.storedBlocks = reuse;
  seq.allocated = true;
  allocTotal_ += totalBlocks;
  allocNew_ += fresh;
  reused_ += reuse;
  missed_ += std::max(0, considered - reuse);
  return true;
}

void KvCacheManager::store(Sequence& seq, const std::vector<uint64_t>& hashes,
                           const std::vector<int32_t>& tokens, bool includeTokens) {
  if (!reuseEnabled_ || !seq.allocated) return;
  const int32_t limit = std::min<int32_t>(static_cast<int32_t>(hashes.size()),
                                          static_cast<int32_t>(seq.blocks.size()));
  KvEvent e;
  e.type = static_cast<int32_t>(KvEventType::kStored);
  e.rank = rank_;
  bool any = false;
  for (int32_t i = seq.storedBlocks; i < limit; ++i) {
    const int32_t id = seq.blocks[static_cast<size_t>(i)];
    Block& b = blocks_[static_cast<size_t>(id)];
    const uint64_t h = hashes[static_cast<size_t>(i)];
    if (byHash_.count(h) != 0) {
      // Another sequence stored the same content first; this copy stays private and is freed on
      // release. The chain continues: later blocks still hash on h.
      continue;
    }
    b.hash = h;
    b.hasParent = i > 0;
    b.parentHash = i > 0 ? hashes[static_cast<size_t>(i - 1)] : 0;
    b.depth = i;
    b.registered = true;
    b.registration = ++registrations_;
    byHash_[h] = id;
    if (!any) {
      e.hasParent = b.hasParent;
      e.parentHash = b.parentHash;
      any = true;
    } else if (e.blockHashes.back() != b.parentHash) {
      // A gap (a duplicate was skipped): start a new event so that each event is one chain.
      sink_(std::move(e));
      e = KvEvent{};
      e.type = static_cast<int32_t>(KvEventType::kStored);
      e.rank = rank_;
      e.hasParent = b.hasParent;
      e.parentHash = b.parentHash;
    }
    e.blockHashes.push_back(h);
    if (includeTokens) {
      const size_t from = static_cast<size_t>(i) * static_cast<size_t>(tpb_);
      e.tokens.insert(e.tokens.end(), tokens.begin() + static_cast<std::ptrdiff_t>(from),
                      tokens.begin() + static_cast<std::ptrdiff_t>(from + static_cast<size_t>(tpb_)));
    }
  }
  seq.storedBlocks = std::max(seq.storedBlocks, limit);
  if (any) sink_(std::move(e));
}

void KvCacheManager::unregister(int32_t id, std::vector<uint64_t>& removed) {
  Block& b = blocks_[static_cast<size_t>(id)];
  if (b.registered) {
    auto it = byHash_.find(b.hash);
    if (it != byHash_.end() && it->second == id) byHash_.erase(it);
    removed.push_back(b.hash);
    b.registered = false;
  }
}

void KvCacheManager::dropRef(int32_t id, bool keep, std::vector<uint64_t>& removed) {
  Block& b = blocks_[static_cast<size_t>(id)];
  if (--b.refCount > 0) return;
  --used_;
  b.lastUsed = tick_;
  if (b.registered && (keep || b.retainCount > 0)) {
    evictable_.insert(evictKey(id));
    if (b.durationUs != kNone && b.priority != kDefaultPriority && b.retainCount == 0) {
      b.expiresUs = releaseUs_ + b.durationUs;
      expiring_.insert({b.expiresUs, id, b.registration});
    }
    return;
  }
  unregister(id, removed);
  b = Block{};
  free_.push_back(id);
}

void KvCacheManager::release(Sequence& seq, bool keep, int64_t nowUs) {
  if (!seq.allocated) return;
  ++tick_;
  releaseUs_ = nowUs;
  std::vector<uint64_t> removed;
  // Deepest first, so that removed events list a chain's suffix before its prefix.
  for (auto it = seq.blocks.rbegin(); it != seq.blocks.rend(); ++it) dropRef(*it, keep, removed);
  emitRemoved(removed);
  seq.blocks.clear();
  seq.allocated = false;
}

void KvCacheManager::setPriority(int32_t id, int32_t priority) {
  Block& b = blocks_[static_cast<size_t>(id)];
  if (b.priority == priority) return;
  const bool inSet = b.refCount == 0 && b.registered && evictable_.erase(evictKey(id)) > 0;
  b.priority = priority;
  if (inSet) evictable_.insert(evictKey(id));
  if (b.registered) emitUpdated(id);
}

void KvCacheManager::refresh(int64_t nowUs) {
  while (!expiring_.empty() && std::get<0>(*expiring_.begin()) <= nowUs) {
    const auto [expires, id, registration] = *expiring_.begin();
    expiring_.erase(expiring_.begin());
    Block& b = blocks_[static_cast<size_t>(id)];
    // a block claimed again, evicted or registered anew since has another expiry or none
    if (!b.registered || b.registration != registration || b.expiresUs != expires) continue;
    b.expiresUs = kNone;
    if (b.refCount == 0 && b.retainCount == 0) setPriority(id, kDefaultPriority);
  }
}

int64_t KvCacheManager::nextExpiryUs() const {
  return expiring_.empty() ? kNone : std::get<0>(*expiring_.begin());
}

int32_t KvCacheManager::priorityOf(uint64_t hash) const {
  const int32_t id = registeredBlock(hash);
  return id < 0 ? kNone : blocks_[static_cast<size_t>(id)].priority;
}

int32_t KvCacheManager::registeredBlock(uint64_t hash) const {
  const auto it = byHash_.find(hash);
  return it == byHash_.end() ? -1 : it->second;
}

std::vector<RetainedBlock> KvCacheManager::retain(const std::vector<int32_t>& ids) {
  std::vector<RetainedBlock> handles;
  handles.reserve(ids.size());
  for (const int32_t id : ids) {
    Block& b = blocks_[static_cast<size_t>(id)];
    if (!b.registered) continue;
    handles.push_back({id, b.registration});
    if (b.retainCount++ == 0) {
      const bool inSet = b.refCount == 0;
      if (inSet) evictable_.erase(evictKey(id));
      b.priority = kRetainedPriority;
      if (inSet) evictable_.insert(evictKey(id));
      emitUpdated(id);
    }
  }
  return handles;
}

void KvCacheManager::unretain(const std::vector<RetainedBlock>& handles) {
  std::vector<uint64_t> removed;
  for (auto it = handles.rbegin(); it != handles.rend(); ++it) {
    const int32_t id = it->id;
    Block& b = blocks_[static_cast<size_t>(id)];
    if (!b.registered || b.registration != it->registration) continue;  // evicted since
    if (b.retainCount == 0 || --b.retainCount > 0) continue;
    if (b.refCount > 0) {
      b.priority = kDefaultPriority;
      emitUpdated(id);
      continue;
    }
    // Unreferenced and no longer retained: the next turn does not need it, drop it.
    evictable_.erase(evictKey(id));
    unregister(id, removed);
    b = Block{};
    free_.push_back(id);
  }
  emitRemoved(removed);
}

void KvCacheManager::emitRemoved(std::vector<uint64_t>& removed) {
  if (removed.empty()) return;
  KvEvent e;
  e.type = static_cast<int32_t>(KvEventType::kRemoved);
  e.rank = rank_;
  e.blockHashes = std::move(removed);
  removed = {};
  sink_(std::move(e));
}

void KvCacheManager::emitUpdated(int32_t id) {
  const Block& b = blocks_[static_cast<size_t>(id)];
  KvEvent e;
  e.type = static_cast<int32_t>(KvEventType::kUpdated);
  e.rank = rank_;
  e.blockHashes.push_back(b.hash);
  e.value = b.priority;
  sink_(std::move(e));
}

void KvCacheManager::fillStats(KvCacheStats& out) const {
  out.maxNumBlocks = capacity();
  out.freeNumBlocks = static_cast<int64_t>(free_.size());
  out.usedNumBlocks = used_;
  out.cachedNumBlocks = static_cast<int64_t>(evictable_.size());
  out.tokensPerBlock = tpb_;
  out.allocTotalBlocks = allocTotal_;
  out.allocNewBlocks = allocNew_;
  out.reusedBlocks = reused_;
  out.missedBlocks = missed_;
  out.evictedBlocks = evicted_;
  out.cacheHitRate = (reused_ + missed_) > 0 ? static_cast<double>(reused_) / static_cast<double>(reused_ + missed_) : 0.0;
}

}  // namespace affinity::sim
