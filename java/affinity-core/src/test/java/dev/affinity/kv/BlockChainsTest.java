package dev.affinity.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.routing.Fleet;
import dev.affinity.routing.RoutingRequest;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** A prompt's block chain continued from the last turn's: the same keys as hashing it whole, whatever they share. */
class BlockChainsTest {
  private static final String[] SALTS = {null, "", "tenant-a", "tenant-b/x"};

  /** The next turn's tokens: a prefix of the last (anywhere, or at a block's edge) and new tokens, or the same. */
  private static int[] next(Random r, int[] last, int tokensPerBlock) {
    int keep = switch (r.nextInt(5)) {
      case 0 -> last.length;
      case 1 -> last.length / tokensPerBlock * tokensPerBlock;
      case 2 -> r.nextInt(last.length + 1);
      case 3 -> Math.max(0, last.length - 1);
      default -> last.length - Math.min(last.length, r.nextInt(3));
    };
    int[] out = Arrays.copyOf(last, keep + r.nextInt(4 * tokensPerBlock + 1));
    for (int i = keep; i < out.length; i++) {
      out[i] = r.nextInt(r.nextBoolean() ? 4 : 200_000);  // small vocabularies repeat the last turn's tokens by chance
    }
    return r.nextInt(10) == 0 ? last.clone() : out;
  }

  @Test
  void aChainContinuedFromTheLastTurnsIsTheWholeHashing() {
    Random r = new Random(4747);
    long reusedSomewhere = 0;
    for (HashAlgorithm algorithm : HashAlgorithm.values()) {
      for (int round = 0; round < 40; round++) {
        int tokensPerBlock = 1 + r.nextInt(r.nextBoolean() ? 4 : 64);
        BlockHasher hasher = new BlockHasher(algorithm, tokensPerBlock);
        String salt = SALTS[r.nextInt(SALTS.length)];
        BlockHasher.Chain prior = null;
        int[] tokens = new int[0];
        for (int turn = 0; turn < 12; turn++) {
          tokens = next(r, tokens, tokensPerBlock);
          if (r.nextInt(8) == 0) {
            salt = SALTS[r.nextInt(SALTS.length)];  // another salt: nothing shared
          }
          BlockHasher.Chain chain = hasher.chain(tokens, salt, prior);
          assertArrayEquals(hasher.keys(tokens, salt), chain.keys(), algorithm + " bs " + tokensPerBlock + " turn " + turn);
          if (algorithm != HashAlgorithm.V1_BLOCK_KEY) {
            assertArrayEquals(hasher.wireHashes(tokens, salt), wire(algorithm, chain));
          }
          if (prior != null && chain.keys().length > 0 && prior.keys().length > 0 && chain.keys()[0] == prior.keys()[0]) {
            reusedSomewhere++;
          }
          prior = chain;
        }
      }
    }
    assertTrue(reusedSomewhere > 100, "turns that shared a first block: " + reusedSomewhere);
  }

  private static String[] wire(HashAlgorithm algorithm, BlockHasher.Chain chain) {
    String[] out = new String[chain.keys().length];
    for (int i = 0; i < out.length; i++) {
      out[i] = algorithm == HashAlgorithm.V2_SHA256 ? java.util.HexFormat.of().formatHex(chain.digests()[i])
          : Long.toUnsignedString(chain.keys()[i]);
    }
    return out;
  }

  @Test
  void anotherHashingIsNotContinued() {
    int[] tokens = new int[100];
    Arrays.setAll(tokens, i -> i * 31);
    BlockHasher v1 = new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 8);
    BlockHasher.Chain prior = new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 16).chain(tokens, null, null);
    assertArrayEquals(v1.keys(tokens, null), v1.chain(tokens, null, prior).keys(), "another block size");
    BlockHasher.Chain sha = new BlockHasher(HashAlgorithm.V2_SHA256_64, 8).chain(tokens, null, null);
    assertArrayEquals(v1.keys(tokens, null), v1.chain(tokens, null, sha).keys(), "another algorithm");
  }

  @Test
  void aRequestsBlockKeysContinueAndReplaceItsConversationsChains() {
    AtomicLong counted = new AtomicLong();
    BlockChains parent = new BlockChains(null, counted::addAndGet);
    int[] first = new int[1000];
    Arrays.setAll(first, i -> i);
    long[] keys = request(first, parent).blockKeys(HashAlgorithm.V1_BLOCK_KEY, 32);
    assertArrayEquals(new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 32).keys(first, "s"), keys);
    assertEquals(parent.bytes(), counted.get(), "what the chains take is told as they grow");
    BlockHasher.Chain stored = parent.prior(HashAlgorithm.V1_BLOCK_KEY, 32);
    assertSame(first, stored.tokens());
    assertNull(parent.prior(HashAlgorithm.V2_SHA256, 32));
    // a sub-agent's first turn continues its parent's chain, then its own
    BlockChains child = new BlockChains(parent, counted::addAndGet);
    assertSame(stored, child.prior(HashAlgorithm.V1_BLOCK_KEY, 32));
    int[] forked = Arrays.copyOf(first, 1200);
    assertArrayEquals(new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, 32).keys(forked, "s"),
        request(forked, child).blockKeys(HashAlgorithm.V1_BLOCK_KEY, 32));
    assertSame(forked, child.prior(HashAlgorithm.V1_BLOCK_KEY, 32).tokens());
    assertSame(first, parent.prior(HashAlgorithm.V1_BLOCK_KEY, 32).tokens(), "the parent's is its own");
  }

  private static RoutingRequest request(int[] tokens, BlockChains chains) {
    return RoutingRequest.builder(1, Fleet.CONTEXT).tokens(tokens).cacheSalt("s").blockChains(chains).build();
  }
}
