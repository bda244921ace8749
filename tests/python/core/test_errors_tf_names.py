"""jf.errors as TF's: every exception class with its error code, TF's three-argument form
OpError(node_def, op, message), and the codes as constants."""
import pytest

import jitflow as jf

CODES = {"CancelledError": 1, "UnknownError": 2, "InvalidArgumentError": 3, "DeadlineExceededError": 4,
         "NotFoundError": 5, "AlreadyExistsError": 6, "PermissionDeniedError": 7, "ResourceExhaustedError": 8,
         "FailedPreconditionError": 9, "AbortedError": 10, "OutOfRangeError": 11, "UnimplementedError": 12,
         "InternalError": 13, "UnavailableError": 14, "DataLossError": 15, "UnauthenticatedError": 16}


@pytest.mark.parametrize("name", sorted(CODES))
def test_error_classes_and_codes(name):
    cls = getattr(jf.errors, name)
    assert issubclass(cls, jf.errors.OpError) and cls.error_code == CODES[name]
    constant = {"DeadlineExceededError": "DEADLINE_EXCEEDED"}.get(name) or "".join(
        ("_" + c if c.isupper() else c.upper()) for c in name[:-5]).lstrip("_")
    assert getattr(jf.errors, constant) == CODES[name]
    err = cls(None, None, "went wrong")
    assert str(err) == "went wrong" and err.message == "went wrong" and err.op is None
    assert cls("plain").message == "plain"


def test_op_errors_carry_their_code():
    with pytest.raises(jf.errors.InvalidArgumentError) as info:
        jf.constant([1, 2]) + jf.constant([1, 2, 3])
    assert info.value.error_code == jf.errors.INVALID_ARGUMENT and "Incompatible shapes" in info.value.message
    assert jf.errors.OK == 0 and issubclass(jf.errors.OperatorNotAllowedInGraphError, TypeError)
