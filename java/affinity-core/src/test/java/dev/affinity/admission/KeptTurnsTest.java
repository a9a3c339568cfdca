package dev.affinity.admission;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.ConversationSettings;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ConversationParams;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.TokenIds;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A conversation's turn read from its last body ({@link KeptTurns#parseChat}) is the request a whole read gives, and
 * writes the same leg bodies, over random conversations whose turns add messages, rewrite earlier ones, change the
 * members around {@code messages}, repeat themselves and change their spacing; a bad turn gets the whole read's
 * error; the legs' ids whose JSON follows the last turn's ({@link KeptTurns#legIds}) write the JSON of a fresh
 * sequence.
 */
class KeptTurnsTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();
  private static final ConversationSettings SETTINGS = new ConversationSettings(List.of("x-session-id"),
      Optional.empty(), SubagentScope.CONTEXT);
  private static final String[] PIECES = {"a", "Z", " ", "\"", "\\", "/", "\n", "\t", "\u0001", "é", "中", "😀",
      "{\"k\": [1, 2]}", "def f(x):\n    return \"x\"\n", "\u2028", "<|im_end|>", "}]", ",{", "\"messages\":[",
      "lorem ipsum dolor sit amet "};
  private static final String[] SPACE = {"", " ", "\n", "\n  ", "\t"};

  private static HeaderSource session(String id) {
    return HeaderSource.of(Map.of("X-Session-Id", id));
  }

  private static void spell(StringBuilder json, String piece, Random r) {
    for (int i = 0; i < piece.length(); i++) {
      char c = piece.charAt(i);
      if (Character.isHighSurrogate(c)) {
        json.append(r.nextBoolean() ? String.format("\\u%04x\\u%04x", (int) c, (int) piece.charAt(i + 1))
            : piece.substring(i, i + 2));
        i++;
      } else if (c == '"' || c == '\\') {
        json.append(r.nextBoolean() ? "\\" + c : String.format("\\u%04x", (int) c));
      } else if (c < 0x20) {
        json.append(c == '\n' && r.nextBoolean() ? "\\n" : String.format("\\u%04X", (int) c));
      } else if (r.nextInt(8) == 0) {
        json.append(String.format("\\u%04x", (int) c));
      } else {
        json.append(c);
      }
    }
  }

  private static String text(Random r) {
    StringBuilder sb = new StringBuilder("\"");
    for (int n = r.nextInt(10); n >= 0; n--) {
      spell(sb, PIECES[r.nextInt(PIECES.length)], r);
    }
    return sb.append('"').toString();
  }

  /** A message as a client spells it: string content, text parts, a tool call, a tool answer, null content. */
  private static String message(Random r) {
    String sp = SPACE[r.nextInt(SPACE.length)];
    return switch (r.nextInt(6)) {
      case 0 -> "{\"role\":" + sp + "\"system\"," + sp + "\"content\":" + text(r) + "}";
      case 1 -> "{" + sp + "\"content\":" + sp + "[{\"type\":\"text\",\"text\":" + text(r) + "}]," + sp
          + "\"role\":\"user\"}";
      case 2 -> "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_" + r.nextInt(1000)
          + "\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":" + text(r) + "}}]}";
      case 3 -> "{\"role\":\"tool\",\"tool_call_id\":\"call_" + r.nextInt(1000) + "\",\"content\":" + text(r) + "}";
      case 4 -> "{\"role\":\"assistant\",\"content\":" + text(r) + ",\"reasoning_content\":" + text(r)
          + ",\"cache_control\":{\"type\":\"ephemeral\"}}";
      default -> "{\"role\":\"user\"," + sp + "\"content\":" + text(r) + "}";
    };
  }

  /** One conversation as it goes: its messages' spellings, the members around them, the spacing. */
  private static final class Conversation {
    final List<String> messages = new ArrayList<>();
    String before = "\"model\":\"m\",";
    String after = ",\"max_tokens\":16";
    String comma = ",";

    String body() {
      return "{" + before + "\"messages\":[" + String.join(comma, messages) + "]" + after + "}";
    }

    void next(Random r) {
      int what = r.nextInt(10);
      if (what < 5 || messages.isEmpty()) {
        for (int n = 1 + r.nextInt(3); n > 0; n--) {
          messages.add(message(r));
        }
      } else if (what == 5) {
        messages.set(r.nextInt(messages.size()), message(r));  // a template-like rewrite of an earlier turn
      } else if (what == 6) {
        after = r.nextBoolean() ? ",\"max_tokens\":" + r.nextInt(100) + ",\"stream\":" + r.nextBoolean()
            : ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}]"
                + ", \"temperature\": 0.5";
      } else if (what == 7) {
        before = r.nextBoolean() ? "\"model\":\"m\"," : "\"max_tokens\":" + r.nextInt(100) + ", \"model\" : \"m\" , ";
      } else if (what == 8) {
        comma = "," + SPACE[r.nextInt(SPACE.length)];
      }  // else: the same body again
    }
  }

  private static void assertSameRead(ChatCompletionRequest whole, ChatCompletionRequest kept, String body) {
    assertEquals(whole, kept, body);
    assertArrayEquals(CODEC.toJsonBytes(whole), CODEC.toJsonBytes(kept), body);
    ConversationParams c = new ConversationParams("c");
    assertArrayEquals(CODEC.toJsonBytes(whole.forLeg(true, null, c, TokenIds.of(1, 2))),
        CODEC.toJsonBytes(kept.forLeg(true, null, c, TokenIds.of(1, 2))), body);
  }

  @Test
  void aTurnReadFromTheLastBodyIsTheRequestAWholeReadGives() {
    Random r = new Random(47);
    KeptTurns kept = new KeptTurns(SETTINGS, 64L << 20);
    for (int conversation = 0; conversation < 60; conversation++) {
      Conversation c = new Conversation();
      HeaderSource h = session("s" + (conversation % 7));  // sessions reused by other conversations too
      for (int turn = 0; turn < 25; turn++) {
        c.next(r);
        byte[] body = c.body().getBytes(StandardCharsets.UTF_8);
        ChatCompletionRequest whole = CODEC.parseChatCompletionRequest(body);
        assertSameRead(whole, kept.parseChat(h, body, CODEC), c.body());
      }
    }
    KeptTurns.Stats s = kept.stats();
    assertTrue(s.reusedBodies() > 600, s.toString());
    assertTrue(s.reusedBodyBytes() > s.readBodyBytes(), s.toString());
  }

  @Test
  void aBadTurnAfterAGoodOneGetsTheWholeReadsError() {
    Random r = new Random(7);
    KeptTurns kept = new KeptTurns(SETTINGS, 64L << 20);
    HeaderSource h = session("bad");
    Conversation c = new Conversation();
    for (int i = 0; i < 5; i++) {
      c.next(r);
    }
    kept.parseChat(h, c.body().getBytes(StandardCharsets.UTF_8), CODEC);
    String good = c.body();
    String[] bad = {
        good.replace("]" + c.after, ",{\"content\":\"no role\"}]" + c.after),  // a new message without its role
        good.replace("]" + c.after, ",{\"role\":\"user\",\"content\":12}]" + c.after),
        good.replace("]" + c.after, ",{\"role\":\"user\",\"content\":\"x\"]" + c.after),  // malformed
        good.replace("]" + c.after, "]" + c.after + ",\"max_tokens\":\"many\""),
        good + " trailing",
        good.replace("]" + c.after, ",{\"role\":\"user\",\"content\":\"\\ud800 lone\"}]" + c.after),
    };
    for (String b : bad) {
      byte[] bytes = b.getBytes(StandardCharsets.UTF_8);
      ProtocolException whole = assertThrows(ProtocolException.class, () -> CODEC.parseChatCompletionRequest(bytes));
      ProtocolException read = assertThrows(ProtocolException.class, () -> kept.parseChat(h, bytes, CODEC), b);
      assertEquals(whole.getMessage(), read.getMessage(), b);
      assertEquals(whole.status(), read.status(), b);
      assertEquals(whole.field(), read.field(), b);
    }
    // invalid UTF-8 in the new part: the offset in the body's own terms
    byte[] base = good.replace("]" + c.after, ",{\"role\":\"user\",\"content\":\"xx\"}]" + c.after)
        .getBytes(StandardCharsets.UTF_8);
    int at = base.length - c.after.length() - 5;
    base[at] = (byte) 0xff;
    ProtocolException whole = assertThrows(ProtocolException.class,
        () -> dev.affinity.protocol.Utf8.jsonBody(base));
    ProtocolException read = assertThrows(ProtocolException.class, () -> kept.parseChat(h, base, CODEC));
    assertEquals(whole.getMessage(), read.getMessage());
    // and the last good turn is still the one kept
    c.next(r);
    c.messages.add("{\"role\":\"user\",\"content\":\"again\"}");
    byte[] next = c.body().getBytes(StandardCharsets.UTF_8);
    long reused = kept.stats().reusedBodies();
    assertSameRead(CODEC.parseChatCompletionRequest(next), kept.parseChat(h, next, CODEC), c.body());
    assertEquals(reused + 1, kept.stats().reusedBodies());
  }

  private static final ConversationSettings WITH_PARENTS = new ConversationSettings(List.of("x-session-id"),
      Optional.of("x-parent-session-id"), SubagentScope.CONTEXT);

  /** A sub-agent's request: its own session (null: none) and its parent's. */
  private static HeaderSource subagent(String own, String parent) {
    return HeaderSource.of(own == null ? Map.of("X-Parent-Session-Id", parent)
        : Map.of("X-Session-Id", own, "X-Parent-Session-Id", parent));
  }

  @Test
  void aSubagentsFirstTurnIsReadFromItsParentsLastBody() {
    Random r = new Random(4646);
    KeptTurns kept = new KeptTurns(WITH_PARENTS, 64L << 20);
    int fromParent = 0;
    for (int parent = 0; parent < 20; parent++) {
      Conversation main = new Conversation();
      HeaderSource p = session("p" + parent);
      for (int turn = 0, turns = 1 + r.nextInt(8); turn < turns; turn++) {
        main.next(r);
        byte[] body = main.body().getBytes(StandardCharsets.UTF_8);
        assertSameRead(CODEC.parseChatCompletionRequest(body), kept.parseChat(p, body, CODEC), main.body());
      }
      // sub-agents fork the parent's conversation at a random message, or start afresh; some without a session
      for (int k = 0; k < 3; k++) {
        Conversation sub = new Conversation();
        sub.before = main.before;
        sub.after = main.after;
        sub.comma = main.comma;
        sub.messages.addAll(main.messages.subList(0, r.nextInt(main.messages.size() + 1)));
        String own = r.nextInt(3) == 0 ? null : "p" + parent + "-sub" + k;
        HeaderSource h = subagent(own, "p" + parent);
        for (int turn = 0; turn < 4; turn++) {
          if (turn > 0 || sub.messages.isEmpty() || r.nextBoolean()) {
            sub.next(r);
          }
          byte[] body = sub.body().getBytes(StandardCharsets.UTF_8);
          long before = kept.stats().reusedBodies();
          assertSameRead(CODEC.parseChatCompletionRequest(body), kept.parseChat(h, body, CODEC), sub.body());
          if (turn == 0) {
            fromParent += (int) (kept.stats().reusedBodies() - before);
          }
        }
      }
      // the parent's own next turn still reads from its own last body
      main.messages.add("{\"role\":\"user\",\"content\":\"next\"}");
      byte[] body = main.body().getBytes(StandardCharsets.UTF_8);
      long before = kept.stats().reusedBodies();
      assertSameRead(CODEC.parseChatCompletionRequest(body), kept.parseChat(p, body, CODEC), main.body());
      assertEquals(before + 1, kept.stats().reusedBodies(), "the parent's turn follows its own");
    }
    assertTrue(fromParent > 10, "first turns read from the parent's body: " + fromParent);
  }

  @Test
  void aSubagentWithoutASessionOfItsOwnKeepsNothingAndAnUnknownParentLendsNothing() {
    KeptTurns kept = new KeptTurns(WITH_PARENTS, 1 << 20);
    String parent = "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"tools\"},"
        + "{\"role\":\"user\",\"content\":\"main\"}]}";
    kept.parseChat(session("p"), parent.getBytes(StandardCharsets.UTF_8), CODEC);
    byte[] child = parent.replace("main", "task").getBytes(StandardCharsets.UTF_8);
    assertSameRead(CODEC.parseChatCompletionRequest(child), kept.parseChat(subagent(null, "p"), child, CODEC),
        "child");
    KeptTurns.Stats s = kept.stats();
    assertEquals(1, s.reusedBodies(), "the system message came from the parent's body");
    assertEquals(1, s.entries(), "nothing kept for a sub-agent without a session");
    kept.parseChat(subagent(null, "nobody"), child, CODEC);
    kept.parseChat(subagent("p", "p"), child, CODEC);  // its own parent: its own last turn
    assertEquals(2, kept.stats().reusedBodies());
    assertEquals(1, kept.stats().entries());
  }

  @Test
  void aSubagentsFirstMessagesTurnAndIdsFollowItsParents() {
    KeptTurns kept = new KeptTurns(WITH_PARENTS, 1 << 20);
    String parent = "{\"model\":\"m\",\"max_tokens\":8,\"system\":\"tools\",\"messages\":["
        + "{\"role\":\"user\",\"content\":\"main\"},{\"role\":\"assistant\",\"content\":\"ok\"}]}";
    kept.parseMessages(session("p"), parent.getBytes(StandardCharsets.UTF_8), CODEC);
    byte[] child = parent.replace("]}", ",{\"role\":\"user\",\"content\":\"task\"}]}")
        .getBytes(StandardCharsets.UTF_8);
    assertSameRead(dev.affinity.anthropic.AnthropicRequests.toChat(child, CODEC, false),
        kept.parseMessages(subagent("c", "p"), child, CODEC), "child");
    assertEquals(1, kept.stats().reusedBodies());
    int[] ids = new int[3 * TokenIds.KEEP_JSON];
    Arrays.setAll(ids, i -> i * 7);
    CODEC.toJsonBytes(Map.of("ids", kept.legIds(session("p"), ids)));  // the parent's legs written
    int[] childIds = Arrays.copyOf(ids, ids.length + 100);
    TokenIds legs = kept.legIds(subagent("c", "p"), childIds);
    assertEquals(1, kept.stats().followedIds(), "the parent's ids' JSON copied");
    assertArrayEquals(CODEC.toJsonBytes(Map.of("ids", TokenIds.of(childIds))), CODEC.toJsonBytes(Map.of("ids", legs)));
  }

  @Test
  void aConversationsBlockChainsAreKeptCountedAndGoWithIt() {
    KeptTurns kept = new KeptTurns(WITH_PARENTS, 1 << 20);
    assertNull(kept.blockChains(HeaderSource.NONE), "nothing kept without a session");
    dev.affinity.kv.BlockChains chains = kept.blockChains(session("p"));
    assertSame(chains, kept.blockChains(session("p")), "the conversation's own, turn after turn");
    long before = kept.stats().bytes();
    int[] tokens = new int[4096];
    Arrays.setAll(tokens, i -> i);
    chains.store(new dev.affinity.kv.BlockHasher(dev.affinity.kv.HashAlgorithm.V2_SHA256, 32).chain(tokens, null, null));
    assertEquals(before + chains.bytes(), kept.stats().bytes(), "counted as the routers store them");
    // a sub-agent's first turn continues its parent's chains
    dev.affinity.kv.BlockChains child = kept.blockChains(subagent("c", "p"));
    assertSame(chains.prior(dev.affinity.kv.HashAlgorithm.V2_SHA256, 32),
        child.prior(dev.affinity.kv.HashAlgorithm.V2_SHA256, 32));
    // an ended session's chains go, and a late store does not bring them back
    kept.forget("p");
    long after = kept.stats().bytes();
    chains.store(new dev.affinity.kv.BlockHasher(dev.affinity.kv.HashAlgorithm.V1_BLOCK_KEY, 32).chain(tokens, null, null));
    assertEquals(after, kept.stats().bytes());
    assertEquals(1, kept.stats().entries());
    // chains larger than the whole budget are not kept
    KeptTurns tiny = new KeptTurns(WITH_PARENTS, 1000);
    dev.affinity.kv.BlockChains big = tiny.blockChains(session("b"));
    big.store(new dev.affinity.kv.BlockHasher(dev.affinity.kv.HashAlgorithm.V1_BLOCK_KEY, 1).chain(tokens, null, null));
    assertEquals(0, tiny.stats().entries());
    assertEquals(0, tiny.stats().bytes());
  }

  @Test
  void theSameBodyAgainIsTheSameRequest() {
    KeptTurns kept = new KeptTurns(SETTINGS, 1 << 20);
    byte[] body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}".getBytes(StandardCharsets.UTF_8);
    ChatCompletionRequest first = kept.parseChat(session("a"), body, CODEC);
    assertSame(first, kept.parseChat(session("a"), body.clone(), CODEC));
  }

  @Test
  void withoutASessionHeaderOrABudgetNothingIsKept() {
    byte[] body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}".getBytes(StandardCharsets.UTF_8);
    KeptTurns kept = new KeptTurns(SETTINGS, 1 << 20);
    kept.parseChat(HeaderSource.NONE, body, CODEC);
    kept.parseChat(session(" "), body, CODEC);
    kept.parseChat(session("bad\u0001id"), body, CODEC);
    assertEquals(0, kept.stats().entries());
    KeptTurns none = KeptTurns.none(SETTINGS);
    none.parseChat(session("a"), body, CODEC);
    assertEquals(new KeptTurns.Stats(0, 0, 0, 0, 0, 0, 0, 0), none.stats());
  }

  @Test
  void aBodyWithAByteOrderMarkIsReadAsTheCodecReadsIt() {
    KeptTurns kept = new KeptTurns(SETTINGS, 1 << 20);
    String json = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"user\",\"content\":\"x\"}]}";
    byte[] plain = json.getBytes(StandardCharsets.UTF_8);
    byte[] bom = new byte[plain.length + 3];
    bom[0] = (byte) 0xef;
    bom[1] = (byte) 0xbb;
    bom[2] = (byte) 0xbf;
    System.arraycopy(plain, 0, bom, 3, plain.length);
    assertEquals(CODEC.parseChatCompletionRequest(plain), kept.parseChat(session("a"), plain, CODEC));
    assertEquals(CODEC.parseChatCompletionRequest(plain), kept.parseChat(session("a"), bom, CODEC));
    assertEquals(CODEC.parseChatCompletionRequest(plain), kept.parseChat(session("a"), plain, CODEC));
  }

  @Test
  void theBudgetBoundsTheTurnsLeastRecentlyUsedFirstAndAnEndedSessionGoes() {
    byte[] body = ("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" + "x".repeat(1000) + "\"}]}")
        .getBytes(StandardCharsets.UTF_8);
    KeptTurns kept = new KeptTurns(SETTINGS, 3 * (5 * body.length + 200));
    for (String s : List.of("a", "b", "c", "d")) {
      kept.parseChat(session(s), body, CODEC);
    }
    KeptTurns.Stats s = kept.stats();
    assertEquals(3, s.entries(), s.toString());
    assertEquals(1, s.evictions());
    assertTrue(s.bytes() <= kept.budgetBytes());
    kept.forget("c");
    assertEquals(2, kept.stats().entries());
    KeptTurns tiny = new KeptTurns(SETTINGS, 100);
    tiny.parseChat(session("a"), body, CODEC);
    assertEquals(0, tiny.stats().entries());
  }

  @Test
  void underTenantIsolationATurnIsKeptInItsTenantsNamespace() {
    KeptTurns kept = new KeptTurns(new ConversationSettings(List.of("x-session-id"), Optional.empty(),
        SubagentScope.CONTEXT, true), 1 << 20);
    assertEquals(dev.affinity.conversation.ConversationResolver.tenantOf(session("s")) + "/s", kept.key(session("s")));
  }

  @Test
  void whereMessagesLieIsFoundOrNotClaimed() {
    String body = "{\"model\":\"m\", \"x\": {\"messages\": [1]}, \"messages\" : [ {\"role\":\"user\",\"content\":\"}]\"} ,"
        + "{\"role\":\"user\",\"content\":\"b\"}\n], \"n\": [1, {\"a\": \"]\"}]}";
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    MessageSpans s = MessageSpans.of(b);
    assertNotNull(s);
    assertEquals(body.indexOf("[ {"), s.open());
    assertEquals(2, s.ends().length);
    assertEquals('}', body.charAt(s.ends()[0]));
    assertEquals(body.indexOf("} ,"), s.ends()[0]);
    assertEquals(body.indexOf("}\n]"), s.ends()[1]);
    for (String unclaimed : List.of(
        "{\"mess\\u0061ges\":[{\"role\":\"user\",\"content\":\"a\"}]}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"messages\":[{\"role\":\"user\",\"content\":\"b\"}]}",
        "{\"messages\":[\"a\"]}",
        "{\"model\":\"m\"}")) {
      byte[] u = unclaimed.getBytes(StandardCharsets.UTF_8);
      assertNull(MessageSpans.of(u), unclaimed);
    }
  }

  @Test
  void legIdsWriteTheJsonOfAFreshSequenceWhateverTheLastTurnShares() {
    Random r = new Random(1024);
    KeptTurns kept = new KeptTurns(SETTINGS, 64L << 20);
    HeaderSource h = session("ids");
    int[] ids = new int[0];
    int followed = 0;
    for (int turn = 0; turn < 80; turn++) {
      int keep = switch (r.nextInt(5)) {
        case 0 -> ids.length;  // the history grows
        case 1 -> ids.length / TokenIds.KEEP_JSON * TokenIds.KEEP_JSON;  // cut at a chunk's edge
        case 2 -> r.nextInt(ids.length + 1);  // rewritten from anywhere
        case 3 -> Math.max(0, ids.length - 1);
        default -> 0;
      };
      int[] next = Arrays.copyOf(ids, keep + r.nextInt(3000) + (r.nextInt(4) == 0 ? 0 : 1));
      for (int i = keep; i < next.length; i++) {
        next[i] = r.nextInt(5) == 0 ? -r.nextInt(Integer.MAX_VALUE) - 1 : r.nextInt(r.nextBoolean() ? 10 : 200_000);
      }
      if (r.nextInt(10) == 0) {
        next = ids.clone();  // the same ids again
      }
      long before = kept.stats().followedIds();
      TokenIds legs = kept.legIds(h, next);
      followed += (int) (kept.stats().followedIds() - before);
      for (int leg = 0; leg < 2; leg++) {  // written for the context leg, copied for the generation leg
        assertArrayEquals(CODEC.toJsonBytes(Map.of("ids", TokenIds.of(next))), CODEC.toJsonBytes(Map.of("ids", legs)),
            "turn " + turn);
      }
      assertEquals(TokenIds.of(next), legs);
      ids = next;
    }
    assertTrue(followed > 30, "followed " + followed);
  }

  /** An Anthropic message as Claude Code sends one: text, thinking, tool uses, tool results, a string. */
  private static String anthropicMessage(Random r, boolean user) {
    String sp = SPACE[r.nextInt(SPACE.length)];
    if (user) {
      return switch (r.nextInt(3)) {
        case 0 -> "{\"role\":\"user\"," + sp + "\"content\":" + text(r) + "}";
        case 1 -> "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_" + r.nextInt(99)
            + "\",\"content\":" + text(r) + "}," + sp + "{\"type\":\"text\",\"text\":" + text(r) + "}]}";
        default -> "{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_" + r.nextInt(99)
            + "\",\"content\":[{\"type\":\"text\",\"text\":" + text(r) + "}],\"is_error\":" + r.nextBoolean()
            + "}],\"role\":\"user\"}";
      };
    }
    return switch (r.nextInt(3)) {
      case 0 -> "{\"role\":\"assistant\",\"content\":" + text(r) + "}";
      case 1 -> "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":" + text(r)
          + ",\"signature\":\"s\"},{\"type\":\"text\",\"text\":" + text(r) + "}]}";
      default -> "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":" + text(r) + "}," + sp
          + "{\"type\":\"tool_use\",\"id\":\"toolu_" + r.nextInt(99) + "\",\"name\":\"read\",\"input\":{\"path\":"
          + text(r) + "}}]}";
    };
  }

  @Test
  void aMessagesTurnReadFromTheLastBodyIsTheChatAWholeConversionGives() {
    Random r = new Random(46);
    KeptTurns kept = new KeptTurns(SETTINGS, 64L << 20);
    for (int conversation = 0; conversation < 40; conversation++) {
      HeaderSource h = session("m" + (conversation % 5));
      List<String> messages = new ArrayList<>();
      String system = r.nextBoolean() ? "\"system\":" + text(r) + ","
          : "\"system\":[{\"type\":\"text\",\"text\":" + text(r) + ",\"cache_control\":{\"type\":\"ephemeral\"}}],";
      boolean systemAfter = r.nextBoolean();  // Claude Code's order, or after the messages
      String tools = ",\"tools\":[{\"name\":\"read\",\"description\":\"r\",\"input_schema\":{\"type\":\"object\"}}]";
      for (int turn = 0; turn < 20; turn++) {
        int what = r.nextInt(8);
        if (what < 5 || messages.isEmpty()) {
          for (int n = 1 + r.nextInt(2); n > 0; n--) {
            messages.add(anthropicMessage(r, messages.size() % 2 == 0));
          }
        } else if (what == 5) {
          int at = r.nextInt(messages.size());
          messages.set(at, anthropicMessage(r, at % 2 == 0));
        } else if (what == 6) {
          system = "\"system\":" + text(r) + ",";  // a new system prompt: every message's chat is kept, the system's not
        }
        String body = "{\"model\":\"m\",\"max_tokens\":64," + (systemAfter ? "" : system) + "\"messages\":["
            + String.join(",", messages) + "]" + (systemAfter ? "," + system.substring(0, system.length() - 1) : "")
            + tools + ",\"stream\":" + (turn % 3 == 0) + "}";
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ChatCompletionRequest whole = dev.affinity.anthropic.AnthropicRequests.toChat(bytes, CODEC, false);
        assertSameRead(whole, kept.parseMessages(h, bytes, CODEC), body);
      }
    }
    KeptTurns.Stats s = kept.stats();
    assertTrue(s.reusedBodies() > 400, s.toString());
  }

  @Test
  void aMessagesTurnThatCannotBeReusedIsConvertedWhole() {
    KeptTurns kept = new KeptTurns(SETTINGS, 1 << 20);
    HeaderSource h = session("lead");
    String first = "{'model':'m','max_tokens':8,'messages':[{'role':'system','content':'be brief'},"
        + "{'role':'user','content':'hi'}]}";
    String next = first.replace("]}", ",{'role':'assistant','content':'yes'},{'role':'user','content':'go'}]}");
    for (String b : List.of(first, next)) {  // a leading system message is folded into the system prompt: never kept
      byte[] bytes = b.replace('\'', '"').getBytes(StandardCharsets.UTF_8);
      assertSameRead(dev.affinity.anthropic.AnthropicRequests.toChat(bytes, CODEC, false),
          kept.parseMessages(h, bytes, CODEC), b);
    }
    assertEquals(0, kept.stats().reusedBodies());
    // a later turn whose new message is refused gets the whole conversion's error, naming its own index
    HeaderSource g = session("bad");
    String ok = "{'model':'m','max_tokens':8,'messages':[{'role':'user','content':'hi'},{'role':'assistant','content':'a'}]}";
    kept.parseMessages(g, ok.replace('\'', '"').getBytes(StandardCharsets.UTF_8), CODEC);
    byte[] bad = ok.replace("]}", ",{'role':'user','content':[{'type':'redacted_thinking','data':'x'}]}]}")
        .replace('\'', '"').getBytes(StandardCharsets.UTF_8);
    ProtocolException whole = assertThrows(ProtocolException.class,
        () -> dev.affinity.anthropic.AnthropicRequests.toChat(bad, CODEC, false));
    ProtocolException read = assertThrows(ProtocolException.class, () -> kept.parseMessages(g, bad, CODEC));
    assertEquals(whole.getMessage(), read.getMessage());
    assertEquals(whole.field(), read.field());
    assertTrue(whole.field().startsWith("messages.2"), whole.field());
  }
}
