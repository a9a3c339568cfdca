package dev.affinity.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/** The primitive LRU set behaves exactly like an access-ordered LinkedHashMap. */
class LongLruSetTest {

  @Test
  void keepsLeastRecentlyUsedOrder() {
    LongLruSet s = new LongLruSet();
    assertTrue(s.add(1));
    assertTrue(s.add(2));
    assertTrue(s.add(3));
    assertFalse(s.add(1), "already there: only touched");
    s.use(2);
    assertEquals(List.of(3L, 1L, 2L), keys(s));
    assertEquals(3, s.removeOldest());
    assertTrue(s.remove(2));
    assertFalse(s.remove(2));
    assertEquals(List.of(1L), keys(s));
    s.clear();
    assertEquals(0, s.size());
    assertThrows(IllegalStateException.class, s::removeOldest);
  }

  /**
   * Random operations over a small key space (so that keys collide, are re-added and removed often,
   * and the table grows and deletes with backward shifts) agree with the reference at every step.
   */
  @Property(tries = 300)
  void agreesWithLinkedHashMap(@ForAll @Size(max = 400) List<@IntRange(min = 0, max = 3) Integer> ops,
      @ForAll @Size(max = 400) List<@IntRange(min = 0, max = 60) Integer> keys) {
    LongLruSet set = new LongLruSet();
    LinkedHashMap<Long, Boolean> ref = new LinkedHashMap<>(16, 0.75f, true);
    for (int i = 0; i < Math.min(ops.size(), keys.size()); i++) {
      long k = keys.get(i) * 0x100000001L;  // spread over the high bits too
      switch (ops.get(i)) {
        case 0 -> assertEquals(ref.put(k, Boolean.TRUE) == null, set.add(k));
        case 1 -> assertEquals(ref.remove(k) != null, set.remove(k));
        case 2 -> {
          ref.get(k);
          set.use(k);
        }
        default -> {
          if (!ref.isEmpty()) {
            Iterator<Long> it = ref.keySet().iterator();
            long oldest = it.next();
            it.remove();
            assertEquals(oldest, set.removeOldest());
          }
        }
      }
      assertEquals(ref.size(), set.size());
      assertEquals(new ArrayList<>(ref.keySet()), keys(set));
      for (long probe = 0; probe <= 60; probe += 7) {
        assertEquals(ref.containsKey(probe * 0x100000001L), set.contains(probe * 0x100000001L));
      }
    }
  }

  private static List<Long> keys(LongLruSet s) {
    List<Long> out = new ArrayList<>();
    s.forEach(out::add);
    return out;
  }
}
