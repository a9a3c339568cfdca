package dev.affinity.responses;

import static dev.affinity.frontend.SseEvents.events;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.frontend.SseEvents.Event;
import dev.affinity.frontend.SseEvents;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.worker.EncodedChunk;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The reframing of OpenAI chat chunks into the Responses API's events, and the whole response object. */
class ResponsesStreamTest {
  static final ProtocolCodec CODEC = new ProtocolCodec();

  static ObjectNode echo() throws Exception {
    return ResponsesRequestsTest.convert("{'model': 'asked', 'instructions': 'Be brief.', 'input': 'hi',"
        + " 'max_output_tokens': 8, 'tools': [{'type': 'function', 'name': 'f', 'parameters': {'type': 'object'}}]}")
        .echo();
  }

  static List<Event> run(ResponsesStream s, String... chunks) throws Exception {
    List<Event> out = SseEvents.run(s, chunks);
    for (int i = 0; i < out.size(); i++) {
      assertEquals(i, out.get(i).data().get("sequence_number").asInt(), "sequence numbers count from 0");
    }
    return out;
  }

  static String chunk(String delta, String finish, String usage) {
    return "{'id': 'c', 'object': 'chat.completion.chunk', 'created': 1, 'model': 'served', 'choices': [{'index': 0,"
        + " 'delta': " + delta + ", 'finish_reason': " + (finish == null ? "null" : "'" + finish + "'") + "}]"
        + (usage == null ? "" : ", 'usage': " + usage) + "}";
  }

  static List<String> types(List<Event> events) {
    return events.stream().map(Event::type).toList();
  }

  @Test
  void textIsOneMessageItemBetweenTheLifecycleEvents() throws Exception {
    List<Event> ev = run(new ResponsesStream(echo()),
        chunk("{'role': 'assistant', 'content': ''}", null, null),
        chunk("{'content': 'Hel'}", null, "{'prompt_tokens': 20, 'completion_tokens': 1, 'total_tokens': 21}"),
        chunk("{'content': 'lo'}", "stop", "{'prompt_tokens': 20, 'completion_tokens': 2, 'total_tokens': 22,"
            + " 'prompt_tokens_details': {'cached_tokens': 16}}"));
    assertEquals(List.of("response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.completed"), types(ev));
    JsonNode created = ev.get(0).data().get("response");
    assertEquals("in_progress", created.get("status").asText());
    assertEquals("Be brief.", created.get("instructions").asText());
    assertEquals(0, created.get("output").size());
    String itemId = ev.get(2).data().at("/item/id").asText();
    assertTrue(itemId.startsWith("msg_"), itemId);
    assertEquals(itemId, ev.get(4).data().get("item_id").asText());
    assertEquals(0, ev.get(4).data().get("output_index").asInt());
    assertEquals("Hello", ev.get(6).data().get("text").asText());
    JsonNode done = ev.get(9).data().get("response");
    assertEquals("completed", done.get("status").asText());
    assertEquals(created.get("id"), done.get("id"));
    assertEquals("served", done.get("model").asText());
    assertEquals("Hello", done.at("/output/0/content/0/text").asText());
    assertEquals("output_text", done.at("/output/0/content/0/type").asText());
    assertEquals("{\"input_tokens\":20,\"input_tokens_details\":{\"cached_tokens\":16,\"cache_write_tokens\":0},\"output_tokens\":2,"
        + "\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":22}", done.get("usage").toString());
    assertEquals("f", done.at("/tools/0/name").asText());
    assertEquals(false, done.get("store").asBoolean());
  }

  @Test
  void aLengthStopEndsWithResponseIncomplete() throws Exception {
    List<Event> ev = run(new ResponsesStream(echo()), chunk("{'content': 'abc'}", "length", null));
    Event last = ev.get(ev.size() - 1);
    assertEquals("response.incomplete", last.type());
    assertEquals("incomplete", last.data().at("/response/status").asText());
    assertEquals("max_output_tokens", last.data().at("/response/incomplete_details/reason").asText());
  }

  @Test
  void reasoningThenTextThenToolCallsAreSeparateItems() throws Exception {
    List<Event> ev = run(new ResponsesStream(echo()),
        chunk("{'reasoning_content': 'think'}", null, null),
        chunk("{'content': 'Calling.'}", null, null),
        chunk("{'tool_calls': [{'index': 0, 'id': 'call_1', 'type': 'function', 'function': {'name': 'f',"
            + " 'arguments': '{\\'a\\''}}]}", null, null),
        chunk("{'tool_calls': [{'index': 1, 'id': 'call_2', 'type': 'function', 'function': {'name': 'g',"
            + " 'arguments': '{}'}}]}", null, null),
        chunk("{'tool_calls': [{'index': 0, 'function': {'arguments': ': 1}'}}]}", "tool_calls", null));
    assertEquals(List.of("response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
        "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.output_item.done",
        "response.completed"), types(ev));
    JsonNode out = ev.get(ev.size() - 1).data().at("/response/output");
    assertEquals(4, out.size());
    assertEquals("reasoning", out.get(0).get("type").asText());
    assertEquals("think", out.get(0).at("/content/0/text").asText());
    assertEquals("Calling.", out.get(1).at("/content/0/text").asText());
    assertEquals("{\"type\":\"function_call\",\"status\":\"completed\",\"call_id\":\"call_1\",\"name\":\"f\","
        + "\"arguments\":\"{\\\"a\\\": 1}\"}", without(out.get(2), "id"));
    assertEquals("call_2", out.get(3).get("call_id").asText(), "the interleaved call is replayed at the end");
    assertEquals(3, ev.get(ev.size() - 2).data().get("output_index").asInt());
  }

  static String without(JsonNode n, String field) {
    ObjectNode copy = (ObjectNode) n.deepCopy();
    copy.remove(field);
    return copy.toString();
  }

  @Test
  void anEmptyAnswerIsOneEmptyMessage() throws Exception {
    List<Event> ev = run(new ResponsesStream(echo()));
    JsonNode done = ev.get(ev.size() - 1).data().get("response");
    assertEquals("", done.at("/output/0/content/0/text").asText());
    assertEquals("asked", done.get("model").asText(), "the requested model when the worker named none");
  }

  @Test
  void aFailureAfterTheStreamStartedEndsWithErrorAndResponseFailed() throws Exception {
    ResponsesStream s = new ResponsesStream(echo());
    List<Event> ev = new ArrayList<>(events(s.open(null)));
    byte[] json = chunk("{'content': 'x'}", null, null).replace('\'', '"').getBytes(StandardCharsets.UTF_8);
    ev.addAll(events(s.chunk(EncodedChunk.of(CODEC.parseChatCompletionStreamChunk(json), json))));
    ev.addAll(events(s.error("{\"error\": {\"message\": \"generation worker lost\", \"type\": \"server_error\"}}"
        .getBytes(StandardCharsets.UTF_8))));
    Event error = ev.get(ev.size() - 2);
    assertEquals("error", error.type());
    assertEquals("generation worker lost", error.data().get("message").asText());
    Event failed = ev.get(ev.size() - 1);
    assertEquals("response.failed", failed.type());
    assertEquals("failed", failed.data().at("/response/status").asText());
    assertEquals("generation worker lost", failed.data().at("/response/error/message").asText());
    assertEquals(0, new ResponsesStream(echo()).broken().length, "nothing to end before the stream started");
  }

  @Test
  void aWholeChatAnswerBecomesAResponseObject() throws Exception {
    String chat = "{'id': 'chatcmpl-1', 'object': 'chat.completion', 'created': 1700000000, 'model': 'served',"
        + " 'choices': [{'index': 0, 'message': {'role': 'assistant', 'content': 'Sure.', 'tool_calls': [{'id': 'call_9',"
        + " 'type': 'function', 'function': {'name': 'f', 'arguments': '{}'}}]}, 'finish_reason': 'tool_calls'}],"
        + " 'usage': {'prompt_tokens': 30, 'completion_tokens': 5, 'total_tokens': 35,"
        + " 'prompt_tokens_details': {'cached_tokens': 10}}}";
    ChatCompletionResponse r = CODEC.parseChatCompletionResponse(chat.replace('\'', '"').getBytes(StandardCharsets.UTF_8));
    ObjectNode resp = ResponsesOutput.toResponse(r, echo());
    assertTrue(resp.get("id").asText().startsWith("resp_"));
    assertEquals("response", resp.get("object").asText());
    assertEquals(1700000000L, resp.get("created_at").asLong());
    assertEquals("completed", resp.get("status").asText());
    assertEquals(2, resp.get("output").size());
    assertEquals("message", resp.at("/output/0/type").asText());
    assertEquals("Sure.", resp.at("/output/0/content/0/text").asText());
    assertEquals("function_call", resp.at("/output/1/type").asText());
    assertEquals("call_9", resp.at("/output/1/call_id").asText());
    assertEquals(30, resp.at("/usage/input_tokens").asInt());
    assertEquals(10, resp.at("/usage/input_tokens_details/cached_tokens").asInt());
    assertEquals(35, resp.at("/usage/total_tokens").asInt());
    assertEquals(8, resp.get("max_output_tokens").asInt());
  }
}
