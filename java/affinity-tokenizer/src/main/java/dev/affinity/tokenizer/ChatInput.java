package dev.affinity.tokenizer;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a chat template renders, in the shapes Hugging Face's {@code apply_chat_template} passes (plain maps, lists,
 * strings, numbers, booleans and nulls, as JSON decodes them).
 *
 * @param messages the conversation
 * @param tools the tool definitions, or null when the request has none
 * @param addGenerationPrompt whether the prompt ends with the assistant's turn opened
 * @param kwargs the request's {@code chat_template_kwargs} (for example {@code enable_thinking})
 */
public record ChatInput(List<Map<String, Object>> messages, List<Object> tools, boolean addGenerationPrompt,
    Map<String, Object> kwargs, List<?> sources) {
  /**
   * @param sources what each message was made from (the request's parsed messages, immutable), the same size as
   *     {@code messages}, or null: where a later turn's message was made from the same object, the two are equal,
   *     and a render that reuses the last one's iterations compares them by that object, not by value
   */
  public ChatInput {
    Objects.requireNonNull(messages, "messages");
    kwargs = kwargs == null ? Map.of() : kwargs;
    if (sources != null && sources.size() != messages.size()) {
      throw new IllegalArgumentException("sources: " + sources.size() + " for " + messages.size() + " messages");
    }
  }

  public ChatInput(List<Map<String, Object>> messages, List<Object> tools, boolean addGenerationPrompt,
      Map<String, Object> kwargs) {
    this(messages, tools, addGenerationPrompt, kwargs, null);
  }
}
