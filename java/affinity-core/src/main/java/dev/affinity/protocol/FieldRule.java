package dev.affinity.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Locale;
import java.util.Set;

/**
 * One request field's rule, as data: the field, the APIs whose bodies carry it, its JSON type, its range, what a
 * worker does when it is absent, and the wording of the 400 that names it. {@link RequestFields} holds every rule;
 * the records, the admission checks and the Messages and Responses conversions all check through it, so a rule is
 * written once. Checks read an absent value and an explicit JSON null alike: as absent.
 *
 * @param field the wire name
 * @param apis the request bodies that carry it
 * @param type its JSON type
 * @param range the numbers allowed (null: any finite number, or no number at all)
 * @param values the strings allowed (empty: any string)
 * @param absent what an absent value means (a default, or the worker's own); for {@link Type#NONE}, why the field
 *     is refused and what to send instead (the error's words)
 * @param wording whose words the error is in
 */
public record FieldRule(String field, Set<Api> apis, Type type, Range range, Set<String> values, String absent,
    Wording wording) {

  /** The request bodies a rule belongs to. */
  public enum Api { CHAT, COMPLETION, MESSAGES, RESPONSES }

  /** A field's JSON type, with the words an error uses for it. */
  public enum Type {
    NUMBER("a number"), INTEGER("an integer"), BOOLEAN("true or false"), STRING("a string"), ARRAY("an array"),
    OBJECT("an object"), STRING_OR_OBJECT("a string or an object"), STRING_ARRAY("an array of strings"),
    /** No value at all: the field is refused on its APIs (an explicit null too), in the rule's own words. */
    NONE("absent");

    private final String expected;

    Type(String expected) {
      this.expected = expected;
    }

    boolean matches(JsonNode v) {
      return switch (this) {
        case NUMBER -> v.isNumber();
        case INTEGER -> v.isIntegralNumber() && v.canConvertToLong();
        case BOOLEAN -> v.isBoolean();
        case STRING -> v.isTextual();
        case ARRAY -> v.isArray();
        case OBJECT -> v.isObject();
        case STRING_OR_OBJECT -> v.isTextual() || v.isObject();
        case STRING_ARRAY -> v.isArray() && allText(v);
        case NONE -> false;
      };
    }

    private static boolean allText(JsonNode array) {
      for (JsonNode item : array) {
        if (!item.isTextual()) {
          return false;
        }
      }
      return true;
    }
  }

  /** The numbers allowed: {@code [min, max]}, or {@code (min, max]} when {@code minOpen}. */
  public record Range(double min, boolean minOpen, double max) {
    public static Range closed(double min, double max) {
      return new Range(min, false, max);
    }

    public static Range aboveZero(double max) {
      return new Range(0, true, max);
    }

    public boolean contains(double x) {
      return (minOpen ? x > min : x >= min) && x <= max;
    }
  }

  /**
   * Whose words an error is in, kept byte for byte as each path has always answered: {@code MODELLED}, the chat and
   * completion records' (a non-finite number is {@code number is out of range}, as Jackson's own overflow);
   * {@code FORWARDED}, the OpenAI fields the records keep unread and admission checks ({@code expected a number but
   * got a string}, {@code frequency_penalty must be in [-2, 2], got 3}); {@code CONVERTED}, the Messages and
   * Responses conversions' ({@code must be a number in [0, 1], got 2}).
   */
  public enum Wording { MODELLED, FORWARDED, CONVERTED }

  public FieldRule {
    apis = Set.copyOf(apis);
    values = Set.copyOf(values);
  }

  /** Whether a body of {@code api} carries this field. */
  public boolean appliesTo(Api api) {
    return apis.contains(api);
  }

  /**
   * Checks a JSON value (absent and null pass).
   *
   * @return {@code v}
   * @throws ProtocolException 400 naming the field
   */
  public JsonNode check(JsonNode v) {
    if (v == null || v.isNull() && type != Type.NONE) {
      return v;
    }
    if (type == Type.NONE) {
      throw ProtocolException.invalidField(field, absent);
    }
    if (!values.isEmpty() && v.isTextual() && !values.contains(v.asText())) {
      throw ProtocolException.invalidField(field, "must be one of " + String.join(", ", new java.util.TreeSet<>(values))
          + ", got " + v);
    }
    if (wording == Wording.CONVERTED) {
      boolean number = type == Type.INTEGER ? v.isIntegralNumber() && v.canConvertToInt() : type.matches(v);
      if (!number || range != null && !range.contains(v.asDouble())) {
        throw ProtocolException.invalidField(field, convertedText() + ", got " + v);
      }
      return v;
    }
    if (!type.matches(v)) {
      // a record's field in the codec's words ("an integer"), a forwarded one in admission's ("a number")
      throw wording == Wording.MODELLED
          ? ProtocolException.invalidField(field, "expected " + type.expected + " but got " + Json.describe(v))
          : typeError(field, type.expected, v);
    }
    if (type == Type.INTEGER) {
      inRange(v.asLong());
    } else if (type == Type.NUMBER) {
      inRange(v.asDouble());
    }
    return v;
  }

  /**
   * Whether a boolean field of {@code body} is true (absent and null are false).
   *
   * @throws ProtocolException 400 naming the field when it is not a boolean
   */
  public boolean isTrue(JsonNode body) {
    JsonNode v = check(body.get(field));
    return v != null && v.asBoolean();
  }

  /**
   * Checks a record's number (null passes).
   *
   * @return {@code v}
   * @throws ProtocolException 400 naming the field
   */
  public <N extends Number> N check(N v) {
    if (v != null) {
      inRange(v.doubleValue());
    }
    return v;
  }

  /**
   * A record's opaque value after checking its type: a deep copy the record keeps. An explicit JSON null is kept,
   * so that it is forwarded as sent.
   */
  public JsonNode opaque(JsonNode v) {
    if (v == null || v.isNull()) {
      return v;
    }
    return check(v).deepCopy();
  }

  private void inRange(double x) {
    if (wording == Wording.MODELLED && !Double.isFinite(x)) {
      throw ProtocolException.invalidField(field, "number is out of range");
    }
    if (range == null || range.contains(x)) {
      return;
    }
    throw ProtocolException.invalidField(field, wording == Wording.MODELLED
        ? "must be between " + range.min() + " and " + range.max() + " (got " + x + ")"
        : field + " must be in [" + fmt(range.min()) + ", " + fmt(range.max()) + "], got " + fmt(x));
  }

  private String convertedText() {
    return switch (type) {
      case BOOLEAN -> "must be a boolean";
      case INTEGER -> "must be an integer >= " + fmt(range.min());
      case NUMBER -> "must be a number in " + (range.minOpen() ? "(" : "[") + fmt(range.min()) + ", "
          + fmt(range.max()) + "]";
      default -> "must be " + type.expected;
    };
  }

  /** Admission's 400 for a value of the wrong JSON type: {@code expected a number but got a string}. */
  public static ProtocolException typeError(String field, String expected, JsonNode got) {
    return ProtocolException.invalidField(field, "expected " + expected + " but got " + kindOf(got));
  }

  /** The type words of a value in admission's errors (a number is "a number", whole or not). */
  private static String kindOf(JsonNode v) {
    return switch (v.getNodeType()) {
      case STRING -> "a string";
      case NUMBER -> "a number";
      case BOOLEAN -> "a boolean";
      case ARRAY -> "an array";
      case OBJECT -> "an object";
      default -> v.getNodeType().name().toLowerCase(Locale.ROOT);
    };
  }

  private static String fmt(double x) {
    return x == Math.rint(x) && Math.abs(x) < 1e15 ? Long.toString((long) x) : Double.toString(x);
  }
}
