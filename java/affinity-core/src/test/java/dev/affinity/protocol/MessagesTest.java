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
      int n = request.messages().size();
      assertEquals(new ArrayList<>(request.messages()).subList(1, n), request.messages().subList(1, n));
      assertEquals(java.util.Arrays.asList(new ArrayList<>(request.messages()).toArray()),
          java.util.Arrays.asList(request.messages().toArray()));
      org.junit.jupiter.api.Assertions.assertThrows(UnsupportedOperationException.class,
          () -> request.messages().subList(0, n).clear(), "immutable, its views too");
      assertEquals(request, CODEC.parseChatCompletionRequest(CODEC.toJsonBytes(request)));
    }
  }

  /**
   * A request's messages that follow the last turn's ({@link ChatCompletionRequest#withMessagesFollowing}) write the
   * JSON the same messages write alone, whatever they share with the last turn: the same objects from the start,
   * equal objects that are not the same, none, all of them, more; whether the last turn's JSON was written or not. Their
   * content characters ({@link ChatCompletionRequest#contentChars}), taken in part from the last turn's count when it
   * was counted, are the sum over the messages.
   */
  @Test
  void messagesThatFollowTheLastTurnsWriteTheSameJsonAsAlone() {
    java.util.Random r = new java.util.Random(45);
    ChatCompletionRequest last = null;
    for (int turn = 0; turn < 300; turn++) {
      ChatCompletionRequest fresh = CODEC.parseChatCompletionRequest(CODEC.toJsonBytes(RequestGen.chat(r)));
      List<ChatMessage> messages = new java.util.ArrayList<>();
      if (last != null) {
        int keep = r.nextInt(last.messages().size() + 1);
        messages.addAll(last.messages().subList(0, keep));
        if (r.nextInt(4) == 0 && !messages.isEmpty()) {  // an equal message, another object, spelled otherwise
          ChatMessage m = messages.get(messages.size() - 1);
          messages.set(messages.size() - 1, CODEC.parse(
              CODEC.toJsonString(m).replace("\\n", "\\u000a").getBytes(StandardCharsets.UTF_8), ChatMessage.class));
        }
      }
      messages.addAll(fresh.messages().subList(0, 1 + r.nextInt(fresh.messages().size())));
      ChatCompletionRequest next = last == null ? fresh.withMessages(messages)
          : fresh.withMessagesFollowing(last.messages(), messages);
      ChatCompletionRequest alone = fresh.withMessages(new java.util.ArrayList<>(messages));
      long chars = messages.stream().mapToLong(m -> m.contentText().length()).sum();
      boolean countFirst = r.nextBoolean();  // counted before the JSON is written (as admission does), after, or never
      if (countFirst) {
        assertEquals(chars, next.contentChars(), "turn " + turn);
      }
      if (r.nextInt(5) > 0) {  // written by the turn's first leg, copied by the second; else never written
        for (int leg = 0; leg < 2; leg++) {
          assertEquals(new String(CODEC.toJsonBytes(alone), StandardCharsets.UTF_8),
              new String(CODEC.toJsonBytes(next), StandardCharsets.UTF_8), "turn " + turn);
        }
      }
      if (!countFirst && r.nextBoolean()) {
        assertEquals(chars, next.contentChars(), "turn " + turn);
      }
      assertEquals(chars, alone.contentChars());
      last = next;
    }
  }
}
