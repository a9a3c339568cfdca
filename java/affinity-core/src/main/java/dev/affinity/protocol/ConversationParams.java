package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.annotation.JacksonStdImpl;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import java.io.IOException;

/**
 * {@code conversation_params}: the stable multi-turn conversation id used for routing.
 *
 * <p>The wire object has exactly one field, {@code conversation_id} (stripped; must be non-empty; a
 * number is accepted and turned into its text, as upstream does). Any other field is rejected, like
 * upstream's {@code extra="forbid"} — except {@code subagent_affinity_id}, which is ignored.
 *
 * <p>{@link #subagentAffinityId()} is a <b>server-private</b> routing key (the parent session of a
 * sub-agent). It is set only by the server, from a trusted header, via {@link #withSubagentAffinityId};
 * it is never read from a body and never written to one: workers receive it as a header.
 *
 * @param conversationId the stripped, non-empty own conversation id
 * @param subagentAffinityId server-private parent session id, or null
 */
@JsonSerialize(using = ConversationParams.Serializer.class)
@JsonDeserialize(using = ConversationParams.Deserializer.class)
public record ConversationParams(String conversationId, String subagentAffinityId) {

  static final String CONVERSATION_ID = "conversation_id";

  /**
   * @throws ProtocolException (field {@code conversation_id}) if the id is null or blank
   */
  public ConversationParams {
    conversationId = strip(conversationId);
    if (conversationId == null) {
      throw ProtocolException.invalidField(CONVERSATION_ID,
          "conversation_params.conversation_id must be a non-empty string");
    }
    subagentAffinityId = strip(subagentAffinityId);
  }

  /** Conversation params with no sub-agent affinity. */
  public ConversationParams(String conversationId) {
    this(conversationId, null);
  }

  /** Server-side only: the same conversation routed with its parent's key (null clears it). */
  public ConversationParams withSubagentAffinityId(String parentId) {
    return new ConversationParams(conversationId, parentId);
  }

  /** The key routers use: the sub-agent affinity id when set, else the own conversation id. */
  public String routingId() {
    return subagentAffinityId != null ? subagentAffinityId : conversationId;
  }

  private static String strip(String s) {
    if (s == null) {
      return null;
    }
    String stripped = s.strip();
    return stripped.isEmpty() ? null : stripped;
  }

  /** Reads {@code conversation_id}; ignores {@code subagent_affinity_id}; rejects anything else. */
  static final class Deserializer extends JsonDeserializer<ConversationParams> {
    @Override
    public ConversationParams deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      if (p.currentToken() != JsonToken.START_OBJECT) {
        throw ProtocolException.invalidField("", "expected an object but got " + Json.describe(p.currentToken()));
      }
      String id = null;
      for (JsonToken t = p.nextToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
        String name = p.currentName();
        JsonToken value = p.nextToken();
        if (CONVERSATION_ID.equals(name)) {
          id = switch (value) {
            case VALUE_STRING, VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> p.getText();
            case VALUE_NULL -> null;
            default -> throw ProtocolException.invalidField(CONVERSATION_ID,
                "expected a string but got " + Json.describe(value));
          };
        } else if (Json.SUBAGENT_AFFINITY_ID.equals(name)) {
          p.skipChildren(); // server-private: never taken from a client body
        } else {
          throw ProtocolException.invalidField(name,
              "unknown field; conversation_params accepts only conversation_id");
        }
      }
      try {
        return new ConversationParams(id, null);
      } catch (ProtocolException e) {
        throw ProtocolException.invalidField(CONVERSATION_ID, "must be a non-empty string");
      }
    }
  }

  /** Writes {@code conversation_id} only. */
  @JacksonStdImpl // stateless: Blackbird keeps its generated accessor for the property (FastSerializersTest)
  static final class Serializer extends JsonSerializer<ConversationParams> {
    @Override
    public void serialize(ConversationParams value, JsonGenerator gen, SerializerProvider serializers)
        throws IOException {
      gen.writeStartObject();
      gen.writeStringField(CONVERSATION_ID, value.conversationId);
      gen.writeEndObject();
    }
  }
}
