package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A chat request's messages are one list for every copy of the request ({@link Messages}), whose JSON is written once
 * and copied into each leg body: the same JSON as the messages written one by one (a tree, a string), every time,
 * for random requests.
 */
class MessagesTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();

  @Test
  void everyLegOfARequestSharesItsMessagesAndWritesTheSameJson() throws Exception {
    Random r = new Random(46);
    for (int i = 0; i < 200; i++) {
      byte[] body = CODEC.toJsonBytes(RequestGen.chat(r));
      ChatCompletionRequest request = CODEC.parseChatCompletionRequest(body);
      OpenAiRequest context = request.forLeg(true, null, new ConversationParams("c"), TokenIds.of(1, 2));
      OpenAiRequest generation = request.forLeg(false, null, null, TokenIds.of(1, 2));
      assertSame(request.messages(), ((ChatCompletionRequest) context).messages(), "one list for every leg");
      assertSame(request.messages(), ((ChatCompletionRequest) generation).messages());
      JsonNode expected = CODEC.toTree(request).get("messages"); // a tree: written message by message
      assertEquals(false, ((Messages) request.messages()).kept());
      for (OpenAiRequest leg : List.of(context, generation, context)) {
        JsonNode written = CODEC.readTree(CODEC.toJsonBytes(leg)).get("messages");
        assertEquals(expected, written, new String(body, StandardCharsets.UTF_8));
        assertEquals(expected, CODEC.readTree(CODEC.toJsonString(leg).getBytes(StandardCharsets.UTF_8)).get("messages"));
      }
      assertEquals(true, ((Messages) request.messages()).kept(), "kept after the first leg body");
      assertEquals(new ArrayList<>(request.messages()), request.messages(), "a list like any other");
      assertEquals(request, CODEC.parseChatCompletionRequest(CODEC.toJsonBytes(request)));
    }
  }
}
