package dev.affinity.anthropic;

import static dev.affinity.frontend.SseEvents.events;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.frontend.SseEvents.Event;
import dev.affinity.frontend.SseEvents;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.worker.EncodedChunk;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The reframing of OpenAI chunks into Anthropic's events, the whole-message conversion and the error envelope. */
class AnthropicStreamTest {
  static final ProtocolCodec CODEC = new ProtocolCodec();

  static List<Event> run(AnthropicStream s, String... chunks) throws Exception {
    return SseEvents.run(s, chunks);
  }

  static String chunk(String delta, String finish, String usage) {
    return "{'id': 'c', 'object': 'chat.completion.chunk', 'created': 1, 'model': 'served', 'choices': [{'index': 0,"
        + " 'delta': " + delta + ", 'finish_reason': " + (finish == null ? "null" : "'" + finish + "'") + "}]"
        + (usage == null ? "" : ", 'usage': " + usage) + "}";
  }

  @Test
  void textStreamHasTheFullEventSequenceAndFinalUsage() throws Exception {
    List<Event> ev = run(new AnthropicStream("asked"),
        chunk("{'role': 'assistant', 'content': 'Hel'}", null, null),
        chunk("{'content': 'lo'}", null, null),
        chunk("{}", "length", "{'prompt_tokens': 100, 'completion_tokens': 2, 'total_tokens': 102,"
            + " 'prompt_tokens_details': {'cached_tokens': 64}}"));
    assertEquals(List.of("message_start", "content_block_start", "content_block_delta", "content_block_delta",
        "content_block_stop", "message_delta", "message_stop"), ev.stream().map(Event::type).toList());
    assertEquals("served", ev.get(0).data().at("/message/model").asText());
    assertTrue(ev.get(0).data().at("/message/id").asText().startsWith("msg_"));
    assertEquals("text", ev.get(1).data().at("/content_block/type").asText());
    assertEquals("lo", ev.get(3).data().at("/delta/text").asText());
    JsonNode md = ev.get(5).data();
    assertEquals("max_tokens", md.at("/delta/stop_reason").asText());
    assertEquals(36, md.at("/usage/input_tokens").asInt());
    assertEquals(64, md.at("/usage/cache_read_input_tokens").asInt());
    assertEquals(2, md.at("/usage/output_tokens").asInt());
  }

  @Test
  void reasoningThenTextThenToolCallsEachGetTheirOwnBlock() throws Exception {
    List<Event> ev = run(new AnthropicStream("m"),
        chunk("{'reasoning_content': 'think'}", null, null),
        chunk("{'content': 'ok'}", null, null),
        chunk("{'tool_calls': [{'index': 0, 'id': 'call_a', 'type': 'function', 'function': {'name': 'a', 'arguments': '{\\\"x\\\"'}}]}", null, null),
        chunk("{'tool_calls': [{'index': 1, 'id': 'call_b', 'type': 'function', 'function': {'name': 'b', 'arguments': '{}'}}]}", null, null),
        chunk("{'tool_calls': [{'index': 0, 'function': {'arguments': ': 1}'}}]}", "tool_calls", null));
    List<String> starts = ev.stream().filter(e -> e.type().equals("content_block_start"))
        .map(e -> e.data().at("/content_block/type").asText()).toList();
    assertEquals(List.of("thinking", "text", "tool_use", "tool_use"), starts);
    List<Integer> indices = ev.stream().filter(e -> e.type().equals("content_block_start"))
        .map(e -> e.data().get("index").asInt()).toList();
    assertEquals(List.of(0, 1, 2, 3), indices);
    StringBuilder args0 = new StringBuilder();
    StringBuilder args1 = new StringBuilder();
    for (Event e : ev) {
      if (e.type().equals("content_block_delta") && e.data().at("/delta/type").asText().equals("input_json_delta")) {
        (e.data().get("index").asInt() == 2 ? args0 : args1).append(e.data().at("/delta/partial_json").asText());
      }
    }
    assertEquals("{\"x\": 1}", args0.toString(), "the interleaved call's fragments stay with their block");
    assertEquals("{}", args1.toString());
    Event second = ev.stream().filter(e -> e.type().equals("content_block_start")).toList().get(3);
    assertEquals("call_b", second.data().at("/content_block/id").asText());
    assertEquals("b", second.data().at("/content_block/name").asText());
    int opened = 0;
    for (Event e : ev) { // one block open at a time
      opened += e.type().equals("content_block_start") ? 1 : e.type().equals("content_block_stop") ? -1 : 0;
      assertTrue(opened == 0 || opened == 1);
    }
    assertEquals("tool_use", ev.get(ev.size() - 2).data().at("/delta/stop_reason").asText());
  }

  @Test
  void aBrokenStreamClosesItsBlockAndEndsWithAnErrorEvent() throws Exception {
    AnthropicStream s = new AnthropicStream("m");
    String json = chunk("{'content': 'partial'}", null, null).replace('\'', '"');
    events(s.chunk(EncodedChunk.of(CODEC.parseChatCompletionStreamChunk(json.getBytes(StandardCharsets.UTF_8)),
        json.getBytes(StandardCharsets.UTF_8))));
    List<Event> ev = events(s.broken());
    assertEquals(List.of("content_block_stop", "error"), ev.stream().map(Event::type).toList());
    assertEquals("api_error", ev.get(1).data().at("/error/type").asText());
    assertEquals(AnthropicStream.INCOMPLETE, ev.get(1).data().at("/error/message").asText());
    assertEquals(0, new AnthropicStream("m").broken().length, "nothing before the stream started");
  }

  @Test
  void aFailureAfterTheStreamStartedEndsItWithAnErrorEventCarryingItsMessage() throws Exception {
    AnthropicStream s = new AnthropicStream("m");
    String json = chunk("{'content': 'partial'}", null, null).replace('\'', '"');
    events(s.chunk(EncodedChunk.of(CODEC.parseChatCompletionStreamChunk(json.getBytes(StandardCharsets.UTF_8)),
        json.getBytes(StandardCharsets.UTF_8))));
    List<Event> ev = events(s.error("{\"error\": {\"message\": \"generation worker g failed mid-stream\"}}"
        .getBytes(StandardCharsets.UTF_8)));
    assertEquals(List.of("content_block_stop", "error"), ev.stream().map(Event::type).toList());
    assertEquals("generation worker g failed mid-stream", ev.get(1).data().at("/error/message").asText());
  }

  @Test
  void aStopSequenceIsReported() throws Exception {
    List<Event> ev = run(new AnthropicStream("m"), "{'id': 'c', 'object': 'chat.completion.chunk', 'created': 1,"
        + " 'model': 'm', 'choices': [{'index': 0, 'delta': {'content': 'x'}, 'finish_reason': 'stop', 'stop_reason': 'END'}]}");
    JsonNode md = ev.get(ev.size() - 2).data();
    assertEquals("stop_sequence", md.at("/delta/stop_reason").asText());
    assertEquals("END", md.at("/delta/stop_sequence").asText());
  }

  @Test
  void aStreamWithoutChunksStillStartsAndStops() throws Exception {
    List<Event> ev = run(new AnthropicStream("asked"));
    assertEquals(List.of("message_start", "message_delta", "message_stop"), ev.stream().map(Event::type).toList());
    assertEquals("asked", ev.get(0).data().at("/message/model").asText());
    assertEquals("end_turn", ev.get(1).data().at("/delta/stop_reason").asText());
  }

  @Test
  void aWholeResponseBecomesAMessage() {
    ChatCompletionResponse chat = CODEC.parseChatCompletionResponse(("{\"id\": \"c\", \"object\": \"chat.completion\","
        + " \"created\": 1, \"model\": \"m\", \"choices\": [{\"index\": 0, \"message\": {\"role\": \"assistant\","
        + " \"content\": \"Sure.\", \"reasoning_content\": \"hmm\", \"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\","
        + " \"function\": {\"name\": \"read\", \"arguments\": \"{\\\"path\\\": \\\"a\\\"}\"}}]}, \"finish_reason\": \"tool_calls\"}],"
        + " \"usage\": {\"prompt_tokens\": 50, \"completion_tokens\": 9, \"total_tokens\": 59,"
        + " \"prompt_tokens_details\": {\"cached_tokens\": 32}}}").getBytes(StandardCharsets.UTF_8));
    JsonNode m = AnthropicResponses.toMessage(chat);
    assertEquals("message", m.get("type").asText());
    assertEquals("thinking", m.at("/content/0/type").asText());
    assertEquals("Sure.", m.at("/content/1/text").asText());
    assertEquals("tool_use", m.at("/content/2/type").asText());
    assertEquals("a", m.at("/content/2/input/path").asText());
    assertEquals("tool_use", m.get("stop_reason").asText());
    assertEquals(18, m.at("/usage/input_tokens").asInt());
    assertEquals(32, m.at("/usage/cache_read_input_tokens").asInt());
    assertEquals(9, m.at("/usage/output_tokens").asInt());
  }

  @Test
  void toolArgumentsThatAreNotAnObjectAreAServerError() {
    assertEquals(500, org.junit.jupiter.api.Assertions.assertThrows(ProtocolException.class,
        () -> AnthropicResponses.toolInput("[1, 2]")).status());
  }

  @Test
  void errorsUseAnthropicsEnvelope() {
    JsonNode e = AnthropicResponses.error(400, ErrorResponse.of(400, "must be a number", "temperature"));
    assertEquals("error", e.get("type").asText());
    assertEquals("invalid_request_error", e.at("/error/type").asText());
    assertEquals("temperature: must be a number", e.at("/error/message").asText());
    assertEquals("authentication_error", AnthropicResponses.errorType(401));
    assertEquals("not_found_error", AnthropicResponses.errorType(404));
    assertEquals("request_too_large", AnthropicResponses.errorType(413));
    assertEquals("api_error", AnthropicResponses.errorType(503));
  }
}
