package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import com.fasterxml.jackson.databind.ser.BeanPropertyWriter;
import com.fasterxml.jackson.databind.ser.PropertyWriter;
import com.fasterxml.jackson.databind.ser.std.ToStringSerializer;
import com.fasterxml.jackson.databind.util.ClassUtil;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The records written on every leg keep Blackbird's generated accessors: Blackbird falls back to reflective
 * {@code Method.invoke} for a property whose serializer is not a standard one ({@code @JacksonStdImpl}, not
 * {@link ToStringSerializer}), and {@code @JsonValue} reads its value by reflection too (2.6% of the frontend's CPU in
 * a profile at c=16 before the protocol's own serializers were marked). A property whose value is another record is
 * walked into rather than checked: Blackbird treats databind's bean serializer as non-standard as well and reads such a
 * property (and each record's {@code extra} any-getter) by reflection, which no annotation here can change.
 */
class FastSerializersTest {

  @Test
  void everyPropertyOfTheLegBodiesHasAStandardSerializer() throws JsonMappingException {
    SerializerProvider provider = ProtocolCodec.sharedMapper().getSerializerProviderInstance();
    List<String> slow = new ArrayList<>();
    Set<Class<?>> seen = new HashSet<>();
    for (Class<?> type : List.of(CompletionRequest.class, ChatCompletionRequest.class, DisaggregatedParams.class,
        ChatMessage.class)) {
      walk(provider, type, type.getSimpleName(), seen, slow);
    }
    // prompt_token_ids_b64 on purpose: one reflective read per leg buys a copy of a string of up to megabytes instead
    // of Blackbird's writeString, which checks every character for escaping (TokenIds.Base64Serializer)
    slow.remove("ChatCompletionRequest.prompt_token_ids_b64 (dev.affinity.protocol.TokenIds$Base64Serializer)");
    assertEquals(List.of(), slow, "properties Blackbird would read by reflection");
    assertTrue(seen.contains(UsageInfo.class), "ctx_usage was walked");
  }

  @Test
  void theEnumsAreWrittenWithoutJsonValue() throws JsonMappingException {
    SerializerProvider provider = ProtocolCodec.sharedMapper().getSerializerProviderInstance();
    for (Class<?> type : List.of(DisaggRequestType.class, DisaggScheduleStyle.class)) {
      JsonSerializer<Object> s = provider.findValueSerializer(type);
      assertTrue(standard(s), type + ": " + s.getClass());
    }
    ProtocolCodec codec = new ProtocolCodec();
    DisaggregatedParams p = DisaggregatedParams.builder(DisaggRequestType.GENERATION_ONLY)
        .scheduleStyle(DisaggScheduleStyle.GENERATION_FIRST).build();
    assertEquals("{\"request_type\":\"generation_only\",\"schedule_style\":1}", codec.toJsonString(p));
  }

  private static void walk(SerializerProvider provider, Class<?> type, String path, Set<Class<?>> seen,
      List<String> slow) throws JsonMappingException {
    if (!seen.add(type)) {
      return;
    }
    JsonSerializer<Object> bean = provider.findValueSerializer(type);
    for (Iterator<PropertyWriter> it = bean.properties(); it.hasNext(); ) {
      PropertyWriter w = it.next();
      if (!(w instanceof BeanPropertyWriter bw)) {
        continue; // the any-getter of unmodelled fields
      }
      Class<?> raw = bw.getType().getRawClass();
      JsonSerializer<Object> s = bw.hasSerializer() ? bw.getSerializer()
          : raw == Object.class || raw.isInterface() && !raw.isAnnotationPresent(JsonSerialize.class) ? null
          : provider.findValueSerializer(raw);
      if (s == null) {
        continue; // resolved per value (JsonNode and sealed interfaces): Jackson's own serializers
      }
      if (s.properties().hasNext()) {
        walk(provider, raw, path + "." + bw.getName(), seen, slow);
      } else if (!standard(s)) {
        slow.add(path + "." + bw.getName() + " (" + s.getClass().getName() + ")");
      }
    }
  }

  /** Blackbird's test for a serializer it may call after its own accessor (SerializerUtil.isDefaultSerializer). */
  private static boolean standard(JsonSerializer<?> s) {
    return ClassUtil.isJacksonStdImpl(s) && !(s instanceof ToStringSerializer);
  }
}
