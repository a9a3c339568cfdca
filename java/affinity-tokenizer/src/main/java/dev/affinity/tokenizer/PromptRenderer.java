package dev.affinity.tokenizer;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ProtocolException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A chat request's prompt ids with a model's tokenizer: its {@code prompt_token_ids} when it sent them, else its
 * messages rendered with the request's own {@code chat_template} (when the deployment allows one) or the model's, and
 * encoded. A template that refuses the conversation ({@code raise_exception}) is a 400 naming {@code messages}, as the
 * worker would answer; a model without a chat template is a 400 too. An error of the template engine itself is a
 * {@link TemplateException} (not raised by the template) for the caller. Thread-safe.
 */
public final class PromptRenderer {
  private static final int REQUEST_TEMPLATES = 16;

  private final ModelTokenizer tokenizer;
  private final Map<String, ChatTemplate> requestTemplates = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, ChatTemplate> eldest) {
      return size() > REQUEST_TEMPLATES;
    }
  };
  private final String fingerprint;
  private final PromptPrefixes prefixes;

  /** Without per-conversation prefixes: every chat is encoded through the segment cache alone. */
  public PromptRenderer(ModelTokenizer tokenizer) {
    this(tokenizer, new PromptPrefixes(0));
  }

  /** {@code prefixes}: each conversation's last prompt, its ids reused by the next turn ({@link PromptPrefixes}). */
  public PromptRenderer(ModelTokenizer tokenizer, PromptPrefixes prefixes) {
    this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
    this.prefixes = Objects.requireNonNull(prefixes, "prefixes");
    this.fingerprint = fingerprintOf(tokenizer);
  }

  /** Each conversation's last prompt, kept for its next turn. */
  public PromptPrefixes prefixes() {
    return prefixes;
  }

  /**
   * Affinity's render fingerprint of this tokenizer and its templates ({@code affinity-render-v1:} and a SHA-256 of
   * the tokenizer file's digest and the template sources): two parties with equal fingerprints render and encode a
   * chat the same way. Not upstream's recipe ({@code tensorrt_llm/serve/render/fingerprint.py}, which hashes the
   * Python tokenizer object), so a stock worker's never equals it and chats go to stock workers as text.
   */
  public String fingerprint() {
    return fingerprint;
  }

  private static String fingerprintOf(ModelTokenizer tokenizer) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      sha.update(tokenizer.fingerprint().getBytes(StandardCharsets.UTF_8));
      tokenizer.chatTemplates().ifPresent(t -> sha.update(t.sources().getBytes(StandardCharsets.UTF_8)));
      return "affinity-render-v1:" + HexFormat.of().formatHex(sha.digest(), 0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  public ModelTokenizer tokenizer() {
    return tokenizer;
  }

  /** The rendered prompt of a chat request. */
  public String render(ChatCompletionRequest chat) {
    return render(chat, null, false).text();
  }

  /**
   * The rendered prompt of a chat request, reusing what {@code previous} (a render of the same conversation) did in
   * the template's loops where their reads are unchanged ({@link RenderMemo}) when {@code memo}.
   */
  private ChatTemplate.Rendered render(ChatCompletionRequest chat, RenderMemo previous, boolean memo) {
    ChatInput input = OpenAiChat.toInput(chat);
    try {
      ChatTemplate template;
      if (chat.chatTemplate() != null) {
        template = requestTemplate(chat.chatTemplate());
      } else if (tokenizer.chatTemplates().isEmpty()) {
        throw ProtocolException.invalidField("messages", "the model's tokenizer has no chat template: send a "
            + "completion, or a chat_template");
      } else {
        template = tokenizer.chatTemplates().get().forInput(input);
      }
      if (!memo) {
        return new ChatTemplate.Rendered(template.render(input), null, 0, 0);
      }
      return template.render(input, previous);
    } catch (TemplateException e) {
      if (!e.raisedByTemplate()) {
        throw e;  // the engine's limit, not the client's fault: the caller decides
      }
      throw ProtocolException.invalidField(chat.chatTemplate() != null ? "chat_template" : "messages", e.getMessage());
    }
  }

  /** The prompt ids of a chat request: the ones it sent, else its rendered prompt encoded. */
  public int[] encodeChat(ChatCompletionRequest chat) {
    return encodeChat(chat, null, null);
  }

  /**
   * {@link #encodeChat(ChatCompletionRequest)} for a turn of conversation {@code key} (null: none), whose last prompt
   * (else, on its first turn, its parent {@code parentKey}'s) lends the ids of what they share ({@link PromptPrefixes})
   * and whose last render lends the iterations of the template's loops whose reads are unchanged ({@link RenderMemo}).
   */
  public int[] encodeChat(ChatCompletionRequest chat, String key, String parentKey) {
    if (chat.promptTokenIds() != null) {
      return chat.promptTokenIds().toArray();
    }
    if (key == null || !prefixes.keeps()) {
      return tokenizer.encodeRendered(render(chat), prefixes, key, parentKey);
    }
    ChatTemplate.Rendered rendered = render(chat, prefixes.renderMemo(key, parentKey), true);
    prefixes.countIterations(rendered.reusedIterations(), rendered.renderedIterations());
    return tokenizer.encodeRendered(rendered.text(), rendered.memo(), prefixes, key, parentKey);
  }

  private ChatTemplate requestTemplate(String source) {
    synchronized (requestTemplates) {
      ChatTemplate t = requestTemplates.get(source);
      if (t != null) {
        return t;
      }
    }
    ChatTemplate compiled;
    try {
      compiled = ChatTemplate.compile(source, "the request", tokenizer.specialTokens());
    } catch (IllegalArgumentException e) {
      throw ProtocolException.invalidField("chat_template", e.getMessage());
    }
    synchronized (requestTemplates) {
      requestTemplates.put(source, compiled);
    }
    return compiled;
  }
}
