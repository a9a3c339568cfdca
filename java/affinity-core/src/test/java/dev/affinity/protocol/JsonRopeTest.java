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
   * turns of 5 kB on a 1 MiB history copy a few MB, where copying the history each turn would copy 300 MiB.
   */
  @Test
  void aLongHistoryIsNotCopiedEveryTurn() {
    JsonRope rope = JsonRope.of(new byte[1 << 20]);
    long before = JsonRope.COPIED.sum();
    for (int turn = 0; turn < 300; turn++) {
      rope = rope.prefix(rope.length() - 1).append(new byte[5001]);
    }
    long copied = JsonRope.COPIED.sum() - before;
    assertTrue(copied < 40L << 20, "copied " + copied);
    assertTrue(rope.pieces() <= 12, "pieces: " + rope.pieces());
    assertEquals((1 << 20) + 300 * 5000, rope.length());
  }

  /** A stream that takes pieces gets them as they lie: direct, read-only for it, and the same bytes. */
  @Test
  void aSpliceTakesThePiecesAsTheyLie() throws Exception {
    Random rng = new Random(48);
    byte[] first = new byte[70_000];
    byte[] second = new byte[3_000];
    rng.nextBytes(first);
    rng.nextBytes(second);
    JsonRope rope = JsonRope.of(first).append(second);
    class Pieces extends java.io.OutputStream implements JsonSplice {
      final java.util.List<java.nio.ByteBuffer> taken = new java.util.ArrayList<>();

      @Override
      public void write(int b) {
        throw new AssertionError("a piece copied");
      }

      @Override
      public void splice(java.nio.ByteBuffer piece) {
        taken.add(piece);
      }
    }
    Pieces out = new Pieces();
    rope.writeTo(out);
    assertEquals(2, out.taken.size());
    java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
    for (java.nio.ByteBuffer p : out.taken) {
      assertTrue(p.isDirect());
      assertTrue(p.isReadOnly());
      byte[] b = new byte[p.remaining()];
      p.duplicate().get(b);
      all.write(b);
    }
    assertArrayEquals(concat(first, second), all.toByteArray());
    java.io.ByteArrayOutputStream copied = new java.io.ByteArrayOutputStream();
    rope.writeTo(copied);  // any other stream: copied through the heap
    assertArrayEquals(concat(first, second), copied.toByteArray());
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
