// Paged KV cache of one attention-DP rank: fixed-size blocks keyed by the v1 block-key hash chain,
// longest-prefix reuse of full blocks, reference counts, prioritized LRU eviction (suffix before
// prefix), per-conversation retention, and KV events in the shape of TensorRT-LLM's.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "affinity/types.h"

namespace affinity::sim {

/// TensorRT-LLM's default retention priority, and the one given to blocks a conversation retains.
constexpr int32_t kDefaultPriority = 35;
constexpr int32_t kRetainedPriority = 90;

/// A retention handle: a block and the registration it had when retained. A block evicted and
/// registered again (for any content) is a new registration, so the stale handles of an older turn
/// cannot release the retention of whichever turn holds the block now.
struct RetainedBlock {
  int32_t id = -1;
  uint64_t registration = 0;
};

/// The retention a request gives one of its blocks (TensorRT-LLM's per-block retention, from its
/// KvCacheRetentionConfig): a priority (unset: a reused block keeps its own, a new one gets kDefaultPriority)
/// and how long it holds once the block is released (kNone: for good).
struct BlockRetention {
  int32_t priority = kNone;
  int64_t durationUs = kNone;
};

/// Blocks held by one request on one rank.
struct Sequence {
  std::vector<int32_t> blocks;  ///< block ids in token order; reserved blocks included
  int32_t reusedBlocks = 0;     ///< leading blocks that came from the cache
  int32_t storedBlocks = 0;     ///< leading blocks whose hash is registered (reused or stored)
  bool allocated = false;
};

class KvCacheManager {
 public:
  using EventSink = std::function<void(KvEvent&&)>;

  KvCacheManager(int32_t rank, int64_t capacityBlocks, int32_t tokensPerBlock, bool reuseEnabled,
                 EventSink sink);

  int32_t rank() const { return rank_; }
  int64_t capacity() const { return static_cast<int64_t>(blocks_.size()); }
  int32_t tokensPerBlock() const { return tpb_; }

  /// Emits the "created" event (once, at start).
  void emitCreated(int32_t windowSize);

  /// Number of leading hashes whose blocks are cached or in use on this rank.
  int32_t matchPrefix(const std::vector<uint64_t>& hashes, int32_t maxBlocks) const;

  /// Blocks that could be handed out now (free + evictable).
  int64_t availableBlocks() const { return static_cast<int64_t>(free_.size() + evictable_.size()); }

  /// Allocates a sequence of totalBlocks blocks, reusing the cached prefix of fullHashes (at most
  /// maxReuse blocks). Returns false and changes nothing when the cache cannot hold it now. retention: one
  /// entry per block (empty: TensorRT-LLM's defaults): a reused block takes its priority when set and its
  /// duration always (TensorRT-LLM's claimBlock), a new block both.
  bool allocate(Sequence& seq, const std::vector<uint64_t>& fullHashes, int32_t maxReuse, int32_t totalBlocks,
                const std::vector<BlockRetention>& retention = {});

  /// Registers the hashes of the sequence's full blocks [storedBlocks, hashes.size()) and emits one
  /// "stored" event for those that were new. tokens: the sequence's tokens (for the event payload).
  void store(Sequence& seq, const std::vector<uint64_t>& hashes, const std::vector<int32_t>& tokens,
             bool includeTokens);

  /// Drops the sequence's references. Unreferenced registered blocks stay cached when keep is true
  /// or a conversation retains them; otherwise they are freed (with a "removed" event). A block released
  /// with a duration and a priority other than the default holds that priority until nowUs + duration.
  void release(Sequence& seq, bool keep, int64_t nowUs = 0);

  /// Reverts the priority of every released block whose retention duration is over by nowUs to the
  /// default (TensorRT-LLM's LRUEvictionPolicy::refresh, run every iteration); a block in use when its
  /// time comes keeps its priority.
  void refresh(int64_t nowUs);
  /// The soonest time a retained block's priority reverts, or kNone.
  int64_t nextExpiryUs() const;
  /// The retention priority of the block registered under hash (kNone when none is).
  int32_t priorityOf(uint64_t hash) const;

  /// The block registered under hash, or -1.
  int32_t registeredBlock(uint64_t hash) const;

  /// Per-conversation retention: retain raises the priority of the given registered blocks
  /// (unregistered ones are skipped) and returns handles; unretain restores the priority and drops
  /// blocks no longer referenced. Handles whose block was evicted since are ignored.
  std::vector<RetainedBlock> retain(const std::vector<int32_t>& blockIds);
  void unretain(const std::vector<RetainedBlock>& blocks);

  /// Stats (usage counters are cumulative).
  void fillStats(KvCacheStats& out) const;
  int64_t usedBlocks() const { return used_; }

 private:
  struct Block {
    uint64_t hash = 0;
    uint64_t parentHash = 0;
    bool hasParent = false;
    bool registered = false;
    int32_t refCount = 0;
    int32_t retainCount = 0;
    int32_t depth = 0;
    int32_t priority = kDefaultPriority;
    uint64_t lastUsed = 0;
    uint64_t registration = 0;  ///< unique per registration (0: never registered)
    int64_t durationUs = kNone;  ///< how long a raised priority holds once released (kNone: for good)
    int64_t expiresUs = kNone;   ///< when the released block's priority reverts (kNone: it does not)
  };
  using EvictKey = std::tuple<int32_t, uint64_t, int32_t, int32_t>;  // priority, tick, -depth, id

  EvictKey evictKey(int32_t id) const;
  int32_t takeBlock();  ///< a free block, evicting the LRU cached one if needed; -1 if none
  void unregister(int32_t id, std::vector<uint64_t>& removed);
  void dropRef(int32_t id, bool keep, std::vector<uint64_t>& removed);
  void emitRemoved(std::vector<uint64_t>& removed);
  void emitUpdated(int32_t id);
  /// Sets a block's priority, keeping the evictable set ordered; emits "updated" when it changes.
  void setPriority(int32_t id, int32_t priority);

  int32_t rank_;
  int32_t tpb_;
  bool reuseEnabled_;
  EventSink sink_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;
  std::set<EvictKey> evictable_;
  /// Released blocks whose raised priority reverts: (expiry, block id, registration).
  std::set<std::tuple<int64_t, int32_t, uint64_t>> expiring_;
  std::unordered_map<uint64_t, int32_t> byHash_;
  uint64_t tick_ = 0;
  int64_t releaseUs_ = 0;  ///< the clock of the release in progress
  uint64_t registrations_ = 0;
  int64_t used_ = 0;
  int64_t allocTotal_ = 0, allocNew_ = 0, reused_ = 0, missed_ = 0, evicted_ = 0;
};

}  // namespace affinity::sim
