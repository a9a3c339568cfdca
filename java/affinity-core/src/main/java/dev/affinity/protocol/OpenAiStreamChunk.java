package dev.affinity.protocol;

/** One streamed chunk of a completion or chat completion. */
public sealed interface OpenAiStreamChunk permits CompletionStreamResponse, ChatCompletionStreamResponse {
  String id();

  String model();

  UsageInfo usage();
}
