package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import java.io.IOException;

/**
 * The walk of {@link ResponseScan} over a worker's whole answer: the top-level object, its choices, a chat
 * message and its tool calls, and {@code usage}, field by field with the records' rules ({@link JsonCopy}); it copies
 * only when it has a generator. What the orchestration reads is left in its fields.
 */
final class ResponseScanner extends JsonCopy {
  private final ByteArrayBuilder out;
  private final boolean chat;
  /** The prompt the leg sent, which the worker's answer repeats; null when it sent text. */
  private final SentPrompt sent;
  UsageInfo usage;
  TokenIds promptTokenIds;
  String promptTokenIdsB64;
  DisaggregatedParams firstParams;
  String firstFinishReason;
  /** How many choices the answer has. */
  int choiceCount;
  /** Whether {@code choices[0]} carries its output: a chat {@code message}, a completion's {@code text} (not null). */
  boolean firstOutput;
  int usageAt = -1;

  ResponseScanner(ProtocolCodec codec, JsonParser p, JsonGenerator g, ByteArrayBuilder out, boolean chat,
      SentPrompt sent) {
    super(codec, p, g);
    this.out = out;
    this.chat = chat;
    this.sent = sent;
  }

  /** The top-level object ({@link CompletionResponse}, {@link ChatCompletionResponse}), then the end of input. */
  void answer() throws IOException {
    expect(p.nextToken(), JsonToken.START_OBJECT);
    if (g != null) {
      g.writeStartObject();
    }
    boolean choices = false;
    Names seen = new Names();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = seen.add(p.currentName());
      JsonToken t = p.nextToken();
      switch (name) {
        case "id", "object", "model" -> string(name, t);
        case "created" -> integer(name, t, false);
        case "choices" -> {
          choices = true;
          choices(t);
        }
        case "usage" -> usage(t);
        case "prompt_token_ids" -> promptTokenIds = promptTokenIds(name, t);
        case "prompt_token_ids_b64" -> {
          if (chat && g == null && sent != null && sent.base64() != null && t == JsonToken.VALUE_STRING) {
            promptTokenIdsB64 = sent.base64(); // the string the leg sent, repeated: left unread (the parser skips it)
          } else if (chat) {
            if (t == JsonToken.VALUE_STRING) {
              promptTokenIdsB64 = p.getText();
            }
            string(name, t);
          } else {
            copyField(name);
          }
        }
        default -> copyField(name);
      }
    }
    if (!choices) {
      throw new GiveUp(); // the record writes "choices": []
    }
    if (g != null) {
      g.writeEndObject();
    }
    if (p.nextToken() != null) {
      throw new GiveUp();
    }
  }

  /**
   * {@code prompt_token_ids}: read, unless the leg sent its prompt as ids and this answer is not copied for a client.
   * A worker answers with the ids it prefilled, which are the ids it was sent (TensorRT-LLM's
   * {@code tensorrt_llm/serve/openai_server.py} returns the request's own {@code prompt_token_ids}), so the array is
   * skipped and the sent ids stand for it: a context answer no longer costs a parse of the whole history's ids.
   */
  private TokenIds promptTokenIds(String name, JsonToken t) throws IOException {
    if (sent != null && sent.ids() != null && g == null && t == JsonToken.START_ARRAY) {
      p.skipChildren();
      return sent.ids();
    }
    return tokenIds(name, t);
  }

  private void choices(JsonToken t) throws IOException {
    expect(t, JsonToken.START_ARRAY); // null: the record writes []
    if (g != null) {
      g.writeFieldName("choices");
      g.writeStartArray();
    }
    int i = 0;
    for (JsonToken e = p.nextToken(); e != JsonToken.END_ARRAY; e = p.nextToken()) {
      expect(e, JsonToken.START_OBJECT);
      choice(i++ == 0);
    }
    choiceCount = i;
    if (g != null) {
      g.writeEndArray();
    }
  }

  /** One choice ({@link CompletionChoice}, {@link ChatChoice}); the parser stands on its start. */
  private void choice(boolean first) throws IOException {
    if (g != null) {
      g.writeStartObject();
    }
    boolean finish = false;
    Names seen = new Names();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = seen.add(p.currentName());
      JsonToken t = p.nextToken();
      switch (name) {
        case "index" -> integer(name, t, true);
        case "finish_reason" -> {
          finish = true;
          if (t != JsonToken.VALUE_NULL) {
            expect(t, JsonToken.VALUE_STRING);
            if (first) {
              firstFinishReason = p.getText();
            }
          }
          copyField(name); // written even when null
        }
        case "logprobs" -> {
          if (t != JsonToken.VALUE_NULL) {
            expect(t, JsonToken.START_OBJECT);
          }
          copyField(name); // an explicit null is kept
        }
        case "stop_reason" -> {
          if (t != JsonToken.VALUE_NULL && t != JsonToken.VALUE_STRING && t != JsonToken.VALUE_NUMBER_INT
              && t != JsonToken.VALUE_NUMBER_FLOAT) {
            throw new GiveUp();
          }
          copyField(name);
        }
        case "disaggregated_params" -> {
          if (t != JsonToken.VALUE_NULL) { // read for the orchestration, never written for a client
            expect(t, JsonToken.START_OBJECT);
            DisaggregatedParams params = codec.readValue(p, DisaggregatedParams.class);
            if (first) {
              firstParams = params;
            }
          }
        }
        default -> {
          if (first && t != JsonToken.VALUE_NULL && name.equals(chat ? "message" : "text")) {
            firstOutput = true;
          }
          choiceField(name, t);
        }
      }
    }
    if (!finish && g != null) {
      g.writeFieldName("finish_reason");
      g.writeNull();
    }
    if (g != null) {
      g.writeEndObject();
    }
  }

  /** The fields of one kind of choice only. */
  private void choiceField(String name, JsonToken t) throws IOException {
    if (chat && name.equals("message")) {
      if (t != JsonToken.VALUE_NULL) {
        expect(t, JsonToken.START_OBJECT);
        if (g != null) {
          g.writeFieldName(name);
        }
        message();
      }
    } else if (!chat && name.equals("text")) {
      string(name, t);
    } else if (!chat && name.equals("token_ids")) {
      tokenIds(name, t);
    } else {
      copyField(name);
    }
  }

  /** A chat message ({@link ChatMessage}); the parser stands on its start. */
  private void message() throws IOException {
    if (g != null) {
      g.writeStartObject();
    }
    boolean role = false;
    Names seen = new Names();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = seen.add(p.currentName());
      JsonToken t = p.nextToken();
      switch (name) {
        case "role" -> {
          expect(t, JsonToken.VALUE_STRING); // required
          role = true;
          copyField(name);
        }
        case "content" -> {
          if (t != JsonToken.VALUE_NULL) {
            expect(t, JsonToken.VALUE_STRING); // content parts: the records decide
          }
          copyField(name); // an explicit null is kept
        }
        case "name", "tool_call_id", "reasoning", "reasoning_content" -> string(name, t);
        case "tool_calls" -> {
          if (t != JsonToken.VALUE_NULL) {
            expect(t, JsonToken.START_ARRAY);
            if (g != null) {
              g.writeFieldName(name);
              g.writeStartArray();
            }
            for (JsonToken e = p.nextToken(); e != JsonToken.END_ARRAY; e = p.nextToken()) {
              expect(e, JsonToken.START_OBJECT);
              toolCall();
            }
            if (g != null) {
              g.writeEndArray();
            }
          }
        }
        default -> copyField(name);
      }
    }
    if (!role) {
      throw new GiveUp();
    }
    if (g != null) {
      g.writeEndObject();
    }
  }

  /** One {@link ToolCall}; the parser stands on its start. */
  private void toolCall() throws IOException {
    if (g != null) {
      g.writeStartObject();
    }
    Names seen = new Names();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = seen.add(p.currentName());
      JsonToken t = p.nextToken();
      switch (name) {
        case "id", "type" -> string(name, t);
        case "index" -> integer(name, t, true);
        case "function" -> {
          if (t != JsonToken.VALUE_NULL) {
            expect(t, JsonToken.START_OBJECT);
            if (g != null) {
              g.writeFieldName(name);
              g.writeStartObject();
            }
            Names fields = new Names();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
              String f = fields.add(p.currentName());
              JsonToken v = p.nextToken();
              if (f.equals("name") || f.equals("arguments")) {
                string(f, v);
              } else {
                copyField(f);
              }
            }
            if (g != null) {
              g.writeEndObject();
            }
          }
        }
        default -> copyField(name);
      }
    }
    if (g != null) {
      g.writeEndObject();
    }
  }

  /** {@code usage}: read with its record's rules; the relay leaves its slot empty for {@link ResponseScan#clientJson}. */
  private void usage(JsonToken t) throws IOException {
    if (t == JsonToken.VALUE_NULL) {
      return;
    }
    expect(t, JsonToken.START_OBJECT);
    usage = readUsage();
    if (g != null) {
      g.writeFieldName("usage");
      g.writeRawValue(""); // the separators are written; the slot is where the value goes
      g.flush();
      usageAt = out.size();
    }
  }
}
