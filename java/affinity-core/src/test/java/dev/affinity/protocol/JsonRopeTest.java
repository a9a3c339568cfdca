package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.ByteArrayOutputStream;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link JsonRope}: the same bytes as one array would hold, whatever the pieces, and few pieces. */
class JsonRopeTest {

  /**
   * A conversation's turns at random: each keeps a random prefix of the last and appends random bytes; the rope holds
   * what an array built by copying holds, compares as it does, and keeps O(log n) pieces.
   */
  @Test
  void turnsHoldWhatCopiesHold() {
    Random rng = new Random(46);
    for (int run = 0; run < 200; run++) {
      byte[] model = new byte[0];
      JsonRope rope = JsonRope.of(model);
      for (int turn = 0; turn < 60; turn++) {
        int keep = rng.nextInt(4) == 0 ? rng.nextInt(model.length + 1) : Math.max(0, model.length - rng.nextInt(3));
        byte[] added = new byte[rng.nextInt(4) == 0 ? 0 : 1 + rng.nextInt(rng.nextBoolean() ? 16 : 3000)];
        rng.nextBytes(added);
        model = concat(Arrays.copyOf(model, keep), added);
        rope = rope.prefix(keep).append(added);
        assertEquals(model.length, rope.length());
        assertArrayEquals(model, rope.toByteArray());
        assertTrue(rope.pieces() <= 2 + 2 * (32 - Integer.numberOfLeadingZeros(Math.max(1, model.length))),
            () -> "too many pieces");
        byte[] around = concat(concat(new byte[] {'x', 'y'}, model), new byte[] {'z'});
        assertTrue(rope.equalsAt(around, 2));
        assertFalse(rope.length() > 0 && rope.equalsAt(around, 1));
        if (model.length > 0) {
          byte[] changed = around.clone();
          int at = 2 + rng.nextInt(model.length);
          changed[at] ^= 1;
          assertFalse(rope.equalsAt(changed, 2), "a changed byte is found");
          assertFalse(rope.equalsAt(Arrays.copyOf(around, around.length - 2), 2), "too short");
        }
      }
    }
  }

  /**
   * Appending one turn at a time to a long history copies what it adds, not the history (the counter's carries): 300
   * turns of 5 kB on a 1 MiB history allocate a few MB, where copying the history each turn would allocate 300 MiB.
   */
  @Test
  void aLongHistoryIsNotCopiedEveryTurn() {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
    JsonRope rope = JsonRope.of(new byte[1 << 20]);
    long before = threads.getCurrentThreadAllocatedBytes();
    for (int turn = 0; turn < 300; turn++) {
      rope = rope.prefix(rope.length() - 1).append(new byte[5001]);
    }
    long allocated = threads.getCurrentThreadAllocatedBytes() - before;
    assertTrue(allocated < 40L << 20, "allocated " + allocated);
    assertTrue(rope.pieces() <= 12, "pieces: " + rope.pieces());
    assertEquals((1 << 20) + 300 * 5000, rope.length());
  }

  @Test
  void prefixesAtTheEnds() {
    JsonRope rope = JsonRope.of("[1,2]".getBytes(StandardCharsets.UTF_8)).append(",3]".getBytes(StandardCharsets.UTF_8));
    assertEquals(0, rope.prefix(0).length());
    assertSame(rope, rope.prefix(rope.length()));
    assertThrows(IndexOutOfBoundsException.class, () -> rope.prefix(rope.length() + 1));
    assertThrows(IndexOutOfBoundsException.class, () -> rope.prefix(-1));
    assertFalse(rope.equalsAt(new byte[3], -1));
  }

  /** As a value: after a field name, in an array, at the root, and through a pretty printer (one raw value). */
  @Test
  void writtenAsAValueWhereverTheGeneratorIs() throws Exception {
    JsonRope rope = JsonRope.of("[1,".getBytes(StandardCharsets.UTF_8)).append("2,3]".getBytes(StandardCharsets.UTF_8));
    JsonFactory f = new JsonFactory();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (JsonGenerator g = f.createGenerator(out)) {
      g.writeStartObject();
      g.writeStringField("a", "b");
      g.writeFieldName("ids");
      rope.writeValue(g);
      g.writeFieldName("list");
      g.writeStartArray();
      rope.writeValue(g);
      rope.writeValue(g);
      g.writeEndArray();
      g.writeNumberField("n", 1);
      g.writeEndObject();
    }
    assertEquals("{\"a\":\"b\",\"ids\":[1,2,3],\"list\":[[1,2,3],[1,2,3]],\"n\":1}", out.toString(StandardCharsets.UTF_8));

    StringWriter chars = new StringWriter();
    try (JsonGenerator g = f.createGenerator(chars)) {
      g.writeStartObject();
      g.writeFieldName("ids");
      rope.writeValue(g);
      g.writeEndObject();
    }
    assertEquals("{\"ids\":[1,2,3]}", chars.toString());

    ByteArrayOutputStream pretty = new ByteArrayOutputStream();
    try (JsonGenerator g = f.createGenerator(pretty).useDefaultPrettyPrinter()) {
      g.writeStartObject();
      g.writeFieldName("ids");
      rope.writeValue(g);
      g.writeEndObject();
    }
    assertEquals("{\n  \"ids\" : [1,2,3]\n}", pretty.toString(StandardCharsets.UTF_8));
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
