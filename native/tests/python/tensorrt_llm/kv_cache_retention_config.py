"""Stand-in for tensorrt_llm.bindings.executor.KvCacheRetentionConfig, which tensorrt_llm.llmapi re-exports.

It checks what upstream checks, with the exceptions upstream raises (NVIDIA/TensorRT-LLM
cpp/tensorrt_llm/executor/kvCacheRetentionConfig.cpp @ 3585984b32cded5cc002d3087d3da4b0fd9fb8a5 and its bindings,
cpp/tensorrt_llm/nanobind/executor/request.cpp):

* a token range's priority outside [kMinRetentionPriority, kMaxRetentionPriority] = [0, 100]: TLLM_CHECK, a
  RuntimeError in Python. The decode retention priority is not checked there;
* the ranges are sorted by token_start; then, range by range: an open range (token_end None) that is not the last,
  a negative token_start, token_end <= token_start, or a token_end beyond the next range's token_start (ranges
  that touch are fine): std::invalid_argument, a ValueError in Python;
* durations are std::chrono::milliseconds: a datetime.timedelta or None, anything else a TypeError (so are token
  positions and priorities that are not ints); token_end and priority have no default.
"""
import datetime
import enum

MIN_RETENTION_PRIORITY, MAX_RETENTION_PRIORITY, DEFAULT_RETENTION_PRIORITY = 0, 100, 35


class KvCacheTransferMode(enum.Enum):
    DRAM = 0
    GDS = 1
    POSIX_DEBUG_FALLBACK = 2


def _int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("stand-in KvCacheRetentionConfig: %s must be an int, got %s" % (name, type(value).__name__))
    return value


def _duration(name, value):
    if value is not None and not isinstance(value, datetime.timedelta):
        raise TypeError("stand-in KvCacheRetentionConfig: %s must be a datetime.timedelta or None, got %s"
                        % (name, type(value).__name__))
    return value


def _plain_ms(value):
    return None if value is None else value / datetime.timedelta(milliseconds=1)


class TokenRangeRetentionConfig:
    def __init__(self, token_start, token_end, priority, duration_ms=None):
        self.token_start = _int("token_start", token_start)
        self.token_end = None if token_end is None else _int("token_end", token_end)
        self.priority = _int("priority", priority)
        self.duration_ms = _duration("duration_ms", duration_ms)
        if not MIN_RETENTION_PRIORITY <= priority <= MAX_RETENTION_PRIORITY:
            raise RuntimeError("Invalid priority value. Must be between %d and %d"
                               % (MIN_RETENTION_PRIORITY, MAX_RETENTION_PRIORITY))

    def __eq__(self, other):
        return (isinstance(other, TokenRangeRetentionConfig)
                and (self.token_start, self.token_end, self.priority, self.duration_ms)
                == (other.token_start, other.token_end, other.priority, other.duration_ms))

    def __repr__(self):
        return "TokenRangeRetentionConfig(%r, %r, %r, %r)" % (self.token_start, self.token_end, self.priority,
                                                              self.duration_ms)

    def to_dict(self):
        """What the stand-in records (durations in milliseconds)."""
        return {"token_start": self.token_start, "token_end": self.token_end, "priority": self.priority,
                "duration_ms": _plain_ms(self.duration_ms)}


class KvCacheRetentionConfig:
    TokenRangeRetentionConfig = TokenRangeRetentionConfig

    def __init__(self, token_range_retention_configs, decode_retention_priority=DEFAULT_RETENTION_PRIORITY,
                 decode_duration_ms=None, transfer_mode=KvCacheTransferMode.DRAM, directory=None):
        ranges = list(token_range_retention_configs)
        for r in ranges:
            if not isinstance(r, TokenRangeRetentionConfig):
                raise TypeError("stand-in KvCacheRetentionConfig: token_range_retention_configs must hold "
                                "TokenRangeRetentionConfig, got %s" % type(r).__name__)
        self._decode_priority = _int("decode_retention_priority", decode_retention_priority)
        self._decode_duration = _duration("decode_duration_ms", decode_duration_ms)
        if not isinstance(transfer_mode, KvCacheTransferMode):
            raise TypeError("stand-in KvCacheRetentionConfig: transfer_mode must be a KvCacheTransferMode")
        self._transfer_mode = transfer_mode
        self._directory = directory
        ranges.sort(key=lambda r: r.token_start)  # std::sort by tokenStart
        for i, r in enumerate(ranges):
            last = i == len(ranges) - 1
            if r.token_end is None and not last:
                raise ValueError("Invalid use of end indicator.")
            if r.token_start < 0:
                raise ValueError("Token indices must be non-negative.")
            if r.token_end is not None and r.token_start >= r.token_end:
                raise ValueError("Range must have a positive, non-zero length.")
            if not last and r.token_end > ranges[i + 1].token_start:
                raise ValueError("Token ranges must be non-overlapping.")
        self._ranges = ranges

    # Read-only, as the bindings' properties.
    @property
    def token_range_retention_configs(self):
        return list(self._ranges)

    @property
    def decode_retention_priority(self):
        return self._decode_priority

    @property
    def decode_duration_ms(self):
        return self._decode_duration

    @property
    def transfer_mode(self):
        return self._transfer_mode

    @property
    def directory(self):
        return self._directory

    def __eq__(self, other):
        return (isinstance(other, KvCacheRetentionConfig)
                and (self._ranges, self._decode_priority, self._decode_duration, self._transfer_mode, self._directory)
                == (other._ranges, other._decode_priority, other._decode_duration, other._transfer_mode,
                    other._directory))

    def to_dict(self):
        """What the stand-in records (durations in milliseconds)."""
        return {"token_range_retention_configs": [r.to_dict() for r in self._ranges],
                "decode_retention_priority": self._decode_priority,
                "decode_duration_ms": _plain_ms(self._decode_duration)}
