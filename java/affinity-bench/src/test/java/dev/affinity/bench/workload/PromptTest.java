package dev.affinity.bench.workload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class PromptTest {

  private static Prompt build(List<Integer> lengths, long idBase) {
    Prompt p = Prompt.empty();
    for (int i = 0; i < lengths.size(); i++) {
      p = p.append(idBase + i, lengths.get(i));
    }
    return p;
  }

  @Property(tries = 200)
  void incrementalIdsEqualIdsComputedInOneGo(@ForAll @Size(min = 1, max = 12) List<@IntRange(min = 1, max = 300) Integer> lengths,
      @ForAll @IntRange(min = 1, max = 64) int blockSize, @ForAll @IntRange(min = 0, max = 11) int cut) {
    Prompt whole = build(lengths, 100);
    List<Long> direct = whole.hashIds(blockSize);
    assertEquals((whole.length() + blockSize - 1) / blockSize, direct.size());
    // the same prompt, hashed after its prefixes were hashed (and cached)
    Prompt again = Prompt.empty();
    for (int i = 0; i < lengths.size(); i++) {
      again = again.append(100 + i, lengths.get(i));
      again.hashIds(blockSize);
    }
    assertEquals(direct, again.hashIds(blockSize));
    // a prefix shares exactly its full blocks
    int c = Math.min(cut, lengths.size() - 1);
    Prompt prefix = build(lengths.subList(0, c + 1), 100);
    List<Long> prefixIds = prefix.hashIds(blockSize);
    int full = prefix.length() / blockSize;
    assertEquals(prefixIds.subList(0, full), direct.subList(0, full));
    if (prefix.length() % blockSize != 0 && prefix.length() < whole.length()) {
      assertNotEquals(prefixIds.get(full), direct.get(full), "a partial block is not the full block it becomes");
    }
  }

  @Test
  void differentContentGivesDifferentIdsFromTheFirstDifferingBlock() {
    Prompt a = Prompt.empty().append(1, 100).append(2, 100);
    Prompt b = Prompt.empty().append(1, 100).append(3, 100);
    List<Long> ia = a.hashIds(32);
    List<Long> ib = b.hashIds(32);
    assertEquals(ia.subList(0, 3), ib.subList(0, 3));
    for (int i = 3; i < ia.size(); i++) {
      assertNotEquals(ia.get(i), ib.get(i), "block " + i);
    }
    assertNotEquals(Prompt.empty().append(1, 64).hashIds(32), Prompt.empty().append(1, 32).append(1, 32).hashIds(32),
        "the same segment id at another offset is other content");
    assertThrows(IllegalArgumentException.class, () -> Prompt.empty().append(1, 0));
  }
}
