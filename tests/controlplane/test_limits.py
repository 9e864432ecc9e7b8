"""The one nesting check the API and the websocket share (`controlplane.limits.nested_deeper_than`)."""

from controlplane.limits import MAX_OBJECT_DEPTH, nested_deeper_than


def nest(levels: int, leaf: object = 1) -> object:
    value = leaf
    for _ in range(levels - 1):
        value = [value]
    return value


def test_the_value_itself_is_level_one_and_every_item_one_more():
    assert not nested_deeper_than(nest(MAX_OBJECT_DEPTH))
    assert nested_deeper_than(nest(MAX_OBJECT_DEPTH + 1))
    assert nested_deeper_than({"a": {"b": {"c": 1}}}, limit=3)
    assert not nested_deeper_than({"a": {"b": {}}}, limit=3)


def test_a_depth_far_past_the_recursion_limit_is_counted_without_recursion():
    assert nested_deeper_than(nest(100_000))
