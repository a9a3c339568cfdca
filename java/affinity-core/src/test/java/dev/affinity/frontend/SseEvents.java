package dev.affinity.frontend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.worker.EncodedChunk;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** What reframed streams' tests read: {@code event: <type>\ndata: <json>} events, checked for framing as parsed. */
public final class SseEvents {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ProtocolCodec CODEC = new ProtocolCodec();

  private SseEvents() {}

  /** One event: its type (equal to its data's {@code type}) and its data. */
  public record Event(String type, JsonNode data) {}

  /** The events of a transformer's bytes; every one framed exactly, with its type repeated in its data. */
  public static List<Event> events(byte[] bytes) throws Exception {
    List<Event> out = new ArrayList<>();
    String text = new String(bytes, StandardCharsets.UTF_8);
    if (text.isEmpty()) {
      return out;
    }
    assertTrue(text.endsWith("\n\n"), text);
    for (String e : text.split("\n\n")) {
      String[] lines = e.split("\n");
      assertEquals(2, lines.length, e);
      assertTrue(lines[0].startsWith("event: ") && lines[1].startsWith("data: "), e);
      JsonNode data = JSON.readTree(lines[1].substring(6));
      assertEquals(lines[0].substring(7), data.get("type").asText());
      out.add(new Event(lines[0].substring(7), data));
    }
    return out;
  }

  /**
   * The events a transformer writes for a whole stream: {@code open}, each chat chunk (written with single quotes
   * for readable tests), then {@code close}.
   */
  public static List<Event> run(StreamTransformer s, String... chunks) throws Exception {
    List<Event> out = new ArrayList<>(events(s.open(null)));
    for (String c : chunks) {
      byte[] json = c.replace('\'', '"').getBytes(StandardCharsets.UTF_8);
      out.addAll(events(s.chunk(EncodedChunk.of(CODEC.parseChatCompletionStreamChunk(json), json))));
    }
    out.addAll(events(s.close(null)));
    return out;
  }
}
