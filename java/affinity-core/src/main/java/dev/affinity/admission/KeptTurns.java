package dev.affinity.admission;

import dev.affinity.anthropic.AnthropicRequests;
import dev.affinity.conversation.ConversationResolver;
import dev.affinity.conversation.ConversationSettings;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.kv.BlockChains;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatMessage;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.TokenIds;
import dev.affinity.protocol.Utf8;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Each conversation's last turn as the frontend read and wrote it, so that the next turn, which re-sends the whole
 * history with a little more, costs what it adds (docs/benchmarks.md, "Agent turns against the history"):
 *
 * <ul>
 *   <li><b>the chat body</b> ({@link #parseChat}): the new body's bytes are compared with the last one's; the
 *       messages that lie whole within the bytes they share are the last request's messages, and only the body
 *       without them is read;
 *   <li><b>the Messages body</b> ({@link #parseMessages}, {@code /v1/messages}, as Claude Code sends its turns): the
 *       same, the chat messages of the Anthropic messages within the shared bytes taken from the last conversion;
 *   <li><b>the ids the legs carry</b> ({@link #legIds}): their JSON is copied from the last turn's where the ids agree
 *       ({@link TokenIds#following});
 *   <li><b>the prompt's block hashes</b> ({@link #blockChains}): the routers hash only the blocks the last turn's
 *       chain does not share ({@link dev.affinity.kv.BlockHasher#chain}).
 * </ul>
 *
 * Both are exact: bytes and ids are compared, never assumed, and what cannot be shown the same is read or written
 * whole. A body the reuse cannot read (a bad one) is read whole, so its 400 names the field and place as always.
 * A turn is kept under the conversation's session header ({@link ConversationSettings#sessionHeaders()}, the first
 * present, in its tenant's namespace under tenant isolation); a request without one keeps nothing. A sub-agent's first
 * turn, which names its parent in the sub-agent header ({@link ConversationResolver#parentSessionKey}), reads from its
 * parent's last turn (it re-sends the parent's prefix: system prompt, tools, the context it forks); a sub-agent without
 * a session of its own reads from it too and keeps nothing.
 *
 * <p>Bounded by bytes: a kept body (chat or Messages) counts five times its length (its bytes; its decoded texts, at most
 * two bytes a byte; the spellings its messages keep, {@link ProtocolCodec#parseKeptChatRequest}; its messages' JSON,
 * which the next turn copies), a block chain what it takes ({@link dev.affinity.kv.BlockHasher.Chain#bytes}, counted
 * as the routers store it), kept ids eleven bytes an id
 * (the ids, and at most seven bytes of JSON each); least recently used first out, and a turn larger than the whole
 * budget is not kept. Thread-safe.
 */
public final class KeptTurns {
  private static final int ENTRY_OVERHEAD = 160;
  private static final int BYTES_PER_BODY_BYTE = 5;
  private static final int BYTES_PER_ID = 11;

  private final ConversationSettings settings;
  private final long budget;
  private final LinkedHashMap<String, Turn> turns = new LinkedHashMap<>(64, 0.75f, true);
  private long bytes;
  private final AtomicLong reusedBodies = new AtomicLong();
  private final AtomicLong wholeBodies = new AtomicLong();
  private final AtomicLong reusedBodyBytes = new AtomicLong();
  private final AtomicLong readBodyBytes = new AtomicLong();
  private final AtomicLong followedIds = new AtomicLong();
  private final AtomicLong evictions = new AtomicLong();

  /** {@code budgetBytes}: the most the kept turns may take; 0 keeps none (every body is read whole). */
  public KeptTurns(ConversationSettings settings, long budgetBytes) {
    if (budgetBytes < 0) {
      throw new IllegalArgumentException("budgetBytes must be >= 0: " + budgetBytes);
    }
    this.settings = Objects.requireNonNull(settings, "settings");
    this.budget = budgetBytes;
  }

  /** Keeps nothing. */
  public static KeptTurns none(ConversationSettings settings) {
    return new KeptTurns(settings, 0);
  }

  /**
   * What a turn keeps: its chat or Messages body as read, the ids its legs carried and its prompt as the routers
   * hashed it (any may be null).
   */
  private record Turn(Body body, MessagesBody messagesBody, TokenIds ids, BlockChains chains, long bytes) {
    Turn withBody(Body b) {
      return new Turn(b, messagesBody, ids, chains, bytes);
    }

    Turn withMessagesBody(MessagesBody b) {
      return new Turn(body, b, ids, chains, bytes);
    }

    Turn withIds(TokenIds i) {
      return new Turn(body, messagesBody, i, chains, bytes);
    }

    Turn withChains(BlockChains c) {
      return new Turn(body, messagesBody, ids, c, bytes);
    }
  }

  private static final Turn EMPTY = new Turn(null, null, null, null, 0);

  /** A chat body, the request read from it, and where its messages end in it. */
  private record Body(byte[] bytes, ChatCompletionRequest request, MessageSpans spans) {}

  /** A Messages ({@code /v1/messages}) body, its chat request and where each message's chat messages end. */
  private record MessagesBody(byte[] bytes, AnthropicRequests.Counted counted, MessageSpans spans) {}

  /**
   * What the kept turns did so far.
   *
   * @param reusedBodies chat bodies read from the last turn's where they agree
   * @param wholeBodies chat bodies of a conversation read whole (a first turn, or nothing shared)
   * @param reusedBodyBytes bytes of those bodies not read again
   * @param readBodyBytes bytes read
   * @param followedIds legs' ids whose JSON follows the last turn's
   * @param entries conversations kept
   * @param bytes what they take
   * @param evictions conversations dropped for room
   */
  public record Stats(long reusedBodies, long wholeBodies, long reusedBodyBytes, long readBodyBytes,
      long followedIds, int entries, long bytes, long evictions) {}

  public Stats stats() {
    synchronized (turns) {
      return new Stats(reusedBodies.get(), wholeBodies.get(), reusedBodyBytes.get(), readBodyBytes.get(),
          followedIds.get(), turns.size(), bytes, evictions.get());
    }
  }

  public long budgetBytes() {
    return budget;
  }

  /** A body read reusing the last one's: {@code reused} of its bytes taken from it, {@code read} parsed. */
  private void countRead(long reused, long read) {
    reusedBodies.incrementAndGet();
    reusedBodyBytes.addAndGet(reused);
    readBodyBytes.addAndGet(read);
  }

  /** A body of a conversation read whole. */
  private void countWhole(long read) {
    wholeBodies.incrementAndGet();
    readBodyBytes.addAndGet(read);
  }

  /** The key a request's turn is kept under ({@link ConversationResolver#sessionKey}); null: none kept. */
  String key(HeaderSource headers) {
    return budget == 0 ? null : ConversationResolver.sessionKey(settings, headers);
  }

  /**
   * The key of the parent session a sub-agent's request names ({@link ConversationResolver#parentSessionKey}), other
   * than its own; null: none.
   */
  private String parentKey(HeaderSource headers, String key) {
    String parent = budget == 0 ? null : ConversationResolver.parentSessionKey(settings, headers);
    return parent == null || parent.equals(key) ? null : parent;
  }

  /**
   * What a request reads its body or ids from: its own conversation's last turn when that has the part ({@code has}),
   * else, for a sub-agent's first turn, its parent's last turn when that has it (a sub-agent sends its parent's
   * prefix: system prompt, tools, the parent's context); null when neither has.
   */
  private Turn lastOf(String key, String parent, java.util.function.Predicate<Turn> has) {
    if (key == null && parent == null) {
      return null;
    }
    synchronized (turns) {
      Turn own = key == null ? null : turns.get(key);
      if (own != null && has.test(own)) {
        return own;
      }
      if (parent == null) {
        return null;
      }
      Turn theirs = turns.get(parent);  // in use by its sub-agents: the most recently used too
      return theirs != null && has.test(theirs) ? theirs : null;
    }
  }

  /**
   * A {@code /v1/chat/completions} body as received (a UTF-8 byte order mark allowed): read as
   * {@link ProtocolCodec#parseChatCompletionRequest} reads it, reusing its conversation's last body where the bytes
   * agree; kept as the conversation's last body.
   *
   * @throws ProtocolException 400, as {@link Utf8#jsonBody} and the codec say, for a bad body
   */
  public ChatCompletionRequest parseChat(HeaderSource headers, byte[] received, ProtocolCodec codec) {
    String key = key(headers);
    Turn last = lastOf(key, parentKey(headers, key), t -> t.body != null);
    Body body = last == null ? null : following(last.body, received, codec);
    if (key == null) {  // nothing kept: read whole, or (a sub-agent without a session) from its parent's body
      return body != null ? body.request : codec.parseChatCompletionRequest(Utf8.jsonBody(received));
    }
    if (body == null) {
      byte[] json = Utf8.jsonBody(received);
      ChatCompletionRequest request = codec.parseKeptChatRequest(json);
      countWhole(json.length);
      MessageSpans spans = MessageSpans.of(json);
      if (spans == null || spans.ends().length != request.messages().size()) {
        return request;  // where its messages lie is not certain: nothing to reuse next time
      }
      body = new Body(json, request, spans);
    }
    Body kept = body;
    update(key, t -> t.withBody(kept));
    return body.request;
  }

  /**
   * A {@code /v1/messages} body as received: converted to its chat request as
   * {@link AnthropicRequests#toChat(byte[], ProtocolCodec, boolean)} converts it, reusing its conversation's last
   * Messages body where the bytes agree (the chat messages of the Anthropic messages within them: the conversion is
   * message by message); kept as the conversation's last. Bodies whose system-role messages lead the list (folded into
   * the system prompt) are read whole.
   *
   * @throws ProtocolException 400, as the conversion says, for a bad body
   */
  public ChatCompletionRequest parseMessages(HeaderSource headers, byte[] received, ProtocolCodec codec) {
    String key = key(headers);
    Turn last = lastOf(key, parentKey(headers, key), t -> t.messagesBody != null);
    MessagesBody body = last == null ? null : followingMessages(last.messagesBody, received, codec);
    if (key == null) {  // nothing kept: converted whole, or (a sub-agent without a session) from its parent's body
      return body != null ? body.counted.chat() : AnthropicRequests.toChat(Utf8.jsonBody(received), codec, false);
    }
    if (body == null) {
      byte[] json = Utf8.jsonBody(received);
      AnthropicRequests.Counted counted = AnthropicRequests.toChatCounted(json, codec);
      countWhole(json.length);
      MessageSpans spans = MessageSpans.of(json);
      if (spans == null || spans.ends().length != counted.chatEnds().length || counted.leadingSystem()) {
        return counted.chat();
      }
      body = new MessagesBody(json, counted, spans);
    }
    MessagesBody kept = body;
    update(key, t -> t.withMessagesBody(kept));
    return body.counted.chat();
  }

  /**
   * {@code received} read from {@code last} as {@link #following} reads a chat body: the chat messages of the Anthropic
   * messages within the shared bytes are {@code last}'s, and only the rest is converted; the system message is the
   * rest's (its {@code system} may follow {@code messages}). Null when nothing can be reused this way.
   */
  private MessagesBody followingMessages(MessagesBody last, byte[] received, ProtocolCodec codec) {
    int m = Arrays.mismatch(last.bytes, received);
    if (m < 0) {
      countRead(received.length, 0);
      return last;
    }
    Tail tail = tail(last.spans, received, m);
    if (tail == null) {
      return null;
    }
    AnthropicRequests.Counted read;
    try {
      read = AnthropicRequests.toChatCounted(tail.bytes, codec);
    } catch (ProtocolException e) {
      return null;  // converted whole: the error names the body's own field
    }
    MessageSpans tailSpans = MessageSpans.of(tail.bytes);
    if (read.leadingSystem() || tailSpans == null || tailSpans.open() != tail.open
        || tailSpans.ends().length != read.chatEnds().length) {
      return null;
    }
    int k = tail.reused;
    int lastSystem = last.counted.system() ? 1 : 0;
    int readSystem = read.system() ? 1 : 0;
    List<ChatMessage> lastMessages = last.counted.chat().messages();
    List<ChatMessage> readMessages = read.chat().messages();
    List<ChatMessage> messages = new ArrayList<>(last.counted.chatEnds()[k - 1] + readMessages.size());
    if (readSystem == 1) {
      // the last turn's system message when it is the same text (both converted, neither spelled: the same JSON), so
      // that the messages' JSON follows the last turn's from the start (ChatCompletionRequest.withMessagesFollowing)
      ChatMessage system = readMessages.get(0);
      messages.add(lastSystem == 1 && lastMessages.get(0).equals(system) ? lastMessages.get(0) : system);
    }
    messages.addAll(lastMessages.subList(lastSystem, last.counted.chatEnds()[k - 1]));
    int fromLast = messages.size();
    messages.addAll(readMessages.subList(readSystem, readMessages.size()));
    int n = tailSpans.ends().length;
    int[] chatEnds = new int[k + n];
    for (int i = 0; i < k; i++) {
      chatEnds[i] = last.counted.chatEnds()[i] - lastSystem + readSystem;
    }
    for (int j = 0; j < n; j++) {
      chatEnds[k + j] = fromLast + read.chatEnds()[j] - readSystem;
    }
    countRead(tail.rest - (tail.open + 1), tail.bytes.length);
    return new MessagesBody(received, new AnthropicRequests.Counted(
        read.chat().withMessagesFollowing(lastMessages, messages), chatEnds,
        read.system(), false), new MessageSpans(tail.open, tail.ends(last.spans, tailSpans)));
  }

  /**
   * The body without the messages it shares whole with the last one ({@code reused} of them): its bytes before the
   * {@code messages} array's {@code [} and from the first new message on; null when it shares none, or no message
   * follows them.
   *
   * @param rest where the first new message's bytes start in {@code received}
   */
  private record Tail(byte[] bytes, int reused, int open, int rest) {
    /** Where the new body's messages end: the shared ones', then the tail's moved back to the body's offsets. */
    int[] ends(MessageSpans last, MessageSpans tail) {
      int[] all = Arrays.copyOf(last.ends(), reused + tail.ends().length);
      for (int j = 0; j < tail.ends().length; j++) {
        all[reused + j] = tail.ends()[j] - (open + 1) + rest;
      }
      return all;
    }
  }

  private static Tail tail(MessageSpans last, byte[] received, int m) {
    int[] ends = last.ends();
    int k = Arrays.binarySearch(ends, m);
    k = k >= 0 ? k : -k - 1;  // messages ending before m
    if (k == 0) {
      return null;
    }
    int after = ends[k - 1] + 1;
    int i = Utf8.skipJsonSpace(received, after);
    if (i >= received.length || received[i] != ',' || Utf8.firstInvalid(received, after, received.length) >= 0) {
      return null;
    }
    int rest = i + 1;
    int open = last.open();
    byte[] tail = new byte[open + 1 + received.length - rest];
    System.arraycopy(received, 0, tail, 0, open + 1);
    System.arraycopy(received, rest, tail, open + 1, received.length - rest);
    return new Tail(tail, k, open, rest);
  }

  /**
   * {@code received} read from {@code last}: the messages within the bytes they share are {@code last}'s, and only
   * the rest of the body (the members before {@code messages}, the new messages, the members after) is parsed.
   * Null when nothing can be reused this way or the rest does not read (the body is then read whole).
   */
  private Body following(Body last, byte[] received, ProtocolCodec codec) {
    int m = Arrays.mismatch(last.bytes, received);
    if (m < 0) {
      countRead(received.length, 0);
      return last;  // the same body again (a retry)
    }
    Tail tail = tail(last.spans, received, m);
    if (tail == null) {
      return null;
    }
    ChatCompletionRequest read;
    try {
      read = codec.parseKeptChatRequest(tail.bytes);
    } catch (ProtocolException e) {
      return null;  // read whole: the error names the body's own field and place
    }
    MessageSpans tailSpans = MessageSpans.of(tail.bytes);
    if (tailSpans == null || tailSpans.open() != tail.open || tailSpans.ends().length != read.messages().size()) {
      return null;
    }
    List<ChatMessage> messages = new ArrayList<>(tail.reused + read.messages().size());
    messages.addAll(last.request.messages().subList(0, tail.reused));
    messages.addAll(read.messages());
    countRead(tail.rest - (tail.open + 1), tail.bytes.length);
    return new Body(received, read.withMessagesFollowing(last.request.messages(), messages),
        new MessageSpans(tail.open, tail.ends(last.spans, tailSpans)));
  }

  /**
   * The ids {@code request}'s legs carry ({@code ids}, not copied: never changed after), as one object whose JSON is
   * written once for all legs and copied from its conversation's last turn's where the ids agree; kept as the
   * conversation's last.
   */
  public TokenIds legIds(HeaderSource headers, int[] ids) {
    String key = ids.length < TokenIds.KEEP_JSON ? null : key(headers);
    String parent = ids.length < TokenIds.KEEP_JSON ? null : parentKey(headers, key);
    if (key == null && parent == null) {
      return TokenIds.of(ids);
    }
    Turn last = lastOf(key, parent, t -> t.ids != null);
    TokenIds next = TokenIds.following(last == null ? null : last.ids, ids);
    if (last != null && last.ids.jsonKept()) {
      followedIds.incrementAndGet();
    }
    if (key != null) {
      update(key, t -> t.withIds(next));
    }
    return next;
  }

  /**
   * The conversation's prompt as the routers hashed it ({@link BlockChains}), which this request's block keys continue
   * and replace ({@link dev.affinity.routing.RoutingRequest#blockKeys}); a sub-agent's first turn continues its
   * parent's. Kept with the conversation's turn and counted in its bytes as the routers store chains. Null without a
   * session header (nothing kept).
   */
  public BlockChains blockChains(HeaderSource headers) {
    String key = key(headers);
    if (key == null) {
      return null;
    }
    String parent = parentKey(headers, key);
    synchronized (turns) {
      Turn own = turns.get(key);
      if (own != null && own.chains != null) {
        return own.chains;
      }
      Turn theirs = parent == null ? null : turns.get(parent);
      BlockChains[] made = new BlockChains[1];
      made[0] = new BlockChains(theirs == null ? null : theirs.chains, grew -> recount(key, made[0]));
      update(key, t -> t.withChains(made[0]));
      return made[0];
    }
  }

  /** A conversation's chains grew: its turn is counted again, if it is still kept with them. */
  private void recount(String key, BlockChains chains) {
    synchronized (turns) {
      Turn t = turns.get(key);
      if (t != null && t.chains == chains) {
        update(key, x -> x);
      }
    }
  }

  /**
   * A session ended or expired: its kept turn goes. {@code conversationId} is the resolution's (a session header's
   * value, in its tenant's namespace), which is the key the turn was kept under.
   */
  public void forget(String conversationId) {
    synchronized (turns) {
      Turn t = turns.remove(conversationId);
      if (t != null) {
        bytes -= t.bytes;
      }
    }
  }

  private long sizeOf(String key, Turn t) {
    return ENTRY_OVERHEAD + 2L * key.length()
        + (t.body == null ? 0 : (long) BYTES_PER_BODY_BYTE * t.body.bytes.length + 4L * t.body.spans.ends().length)
        + (t.messagesBody == null ? 0
            : (long) BYTES_PER_BODY_BYTE * t.messagesBody.bytes.length + 8L * t.messagesBody.spans.ends().length)
        + (t.ids == null ? 0 : (long) BYTES_PER_ID * t.ids.size())
        + (t.chains == null ? 0 : t.chains.bytes());
  }

  private void update(String key, java.util.function.UnaryOperator<Turn> change) {
    synchronized (turns) {
      Turn old = turns.remove(key);
      if (old != null) {
        bytes -= old.bytes;
      }
      Turn t = change.apply(old == null ? EMPTY : old);
      long size = sizeOf(key, t);
      if (size > budget) {
        return;
      }
      turns.put(key, new Turn(t.body, t.messagesBody, t.ids, t.chains, size));
      bytes += size;
      var it = turns.entrySet().iterator();
      while (bytes > budget && it.hasNext()) {
        var e = it.next();
        if (e.getKey().equals(key)) {
          continue;
        }
        bytes -= e.getValue().bytes;
        it.remove();
        evictions.incrementAndGet();
      }
    }
  }
}
