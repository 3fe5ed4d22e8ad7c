"""The attempt boundary's table and the AttemptFailure text it builds, value by value."""

from __future__ import annotations

from routeproof.core.boundary import (
    MAX_DETAIL_CHARS,
    BoundaryOutcome,
    UnsupportedParameters,
    classify_exception,
    skip_reason_of,
)
from routeproof.core.types import AttemptFailure, AttemptFailureKind
from routeproof.errors import TranslationError


def test_unsupported_parameters_names_the_model_and_each_parameter() -> None:
    """UnsupportedParameters keeps model and parameters and lists them comma-separated in its text."""
    exc = UnsupportedParameters("gpt-x", ("seed", "top_k"))
    assert str(exc) == "model 'gpt-x' does not accept seed, top_k"
    assert exc.model == "gpt-x"
    assert exc.parameters == ("seed", "top_k")
    assert isinstance(exc, TranslationError)


def test_unsupported_parameters_is_skipped_not_failed() -> None:
    """An UnsupportedParameters escaping an attempt skips the provider as unsupported_parameter."""
    assert classify_exception(UnsupportedParameters("m", ("a",))) == (
        BoundaryOutcome(skip_reason="unsupported_parameter"),
        None,
    )


def test_a_skip_names_the_fields_the_exception_could_not_carry() -> None:
    """A skip reason names the refused fields when the exception knows them, else is the table's reason."""
    refused = TranslationError("cannot carry 'audio', 'modalities'", fields=("audio", "modalities"))
    assert skip_reason_of("untranslatable", refused) == "untranslatable: audio, modalities"
    assert skip_reason_of("untranslatable", TranslationError("no equivalent")) == "untranslatable"
    assert skip_reason_of("unsupported_parameter", UnsupportedParameters("m", ("seed",))) == (
        "unsupported_parameter: seed"
    )
    assert skip_reason_of("misconfigured", ValueError("x")) == "misconfigured"


def test_a_failure_message_is_the_type_name_and_the_text() -> None:
    """Any other exception is INVALID_RESPONSE with message 'TypeName: text'."""
    outcome, failure = classify_exception(KeyError("k"))
    assert outcome == BoundaryOutcome(failure_kind=AttemptFailureKind.INVALID_RESPONSE)
    assert failure == AttemptFailure(kind=AttemptFailureKind.INVALID_RESPONSE, message="KeyError: 'k'")


def test_an_exception_without_text_gives_just_the_type_name() -> None:
    """An exception with an empty message is reported as its type name alone, no trailing ': '."""
    _, failure = classify_exception(ValueError())
    assert failure is not None
    assert failure.message == "ValueError"


def test_trailing_colons_and_spaces_are_trimmed_but_other_text_kept() -> None:
    """The text is kept as is except trailing ':' and ' ' (a text ending in X keeps its X)."""
    _, failure = classify_exception(RuntimeError("bad value: "))
    assert failure is not None
    assert failure.message == "RuntimeError: bad value"
    _, failure = classify_exception(RuntimeError("XX"))
    assert failure is not None
    assert failure.message == "RuntimeError: XX"


def test_the_text_is_cut_at_max_detail_chars() -> None:
    """Only the first MAX_DETAIL_CHARS characters of the exception text are kept."""
    _, failure = classify_exception(RecursionError("y" * (MAX_DETAIL_CHARS + 50)))
    assert failure is not None
    assert failure.message == "RecursionError: " + "y" * MAX_DETAIL_CHARS
