"""The CEL interpreter on its own: values, operators, macros and library functions against
the semantics of cel-spec's langdef.md and cel-go (the implementation Kubernetes runs),
compile-time errors as cel-go words them, the cost limit, schema-typed values (formats,
escaped property names, set/map lists), and the CRD-time / write-time rule checks."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from kubeplane.cel import CelError, CompileError, CostExceeded, compile_expr, crd_rule_errors, validate_object
from kubeplane.cel.celtypes import DYN, CelT
from kubeplane.cel.formats import checker_for
from kubeplane.cel.gostr import go_format_g, go_quote
from kubeplane.cel.schema_types import decl_type, escape
from kubeplane.cel.values import Duration, Timestamp, UInt


def run(expr: str, limit: int = 1_000_000, **variables: Any) -> Any:
    program = compile_expr(expr, {name: DYN for name in variables})
    return program.eval(variables, limit)[0]


def run_typed(expr: str, types: dict[str, CelT], **variables: Any) -> Any:
    return compile_expr(expr, types).eval(variables)[0]


def error_of(expr: str, **variables: Any) -> str:
    with pytest.raises(CelError) as info:
        run(expr, **variables)
    return info.value.message


def compile_error(expr: str, types: dict[str, CelT] | None = None) -> str:
    with pytest.raises(CompileError) as info:
        compile_expr(expr, types or {})
    return info.value.render()


# ---------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # literals and the int / uint / double distinction
        ("42", 42),
        ("0x2A", 42),
        ("42u", UInt(42)),
        ("-9223372036854775808", -(2**63)),
        ("1.5e3", 1500.0),
        (".5", 0.5),
        ("'a\\tb'", "a\tb"),
        ('"\\u00e9\\x41\\101"', "éAA"),
        ("r'\\d+'", "\\d+"),
        ("'''two\nlines'''", "two\nlines"),
        ("b'\\xff\\x00'", b"\xff\x00"),
        ("null", None),
        ("[1, 2][1]", 2),
        ("{'a': 1, 'b': 2}['b']", 2),
        ("{dyn(1): 'x', dyn('k'): 'y'}[1.0]", "x"),  # numeric keys match across int/uint/double
        # arithmetic: truncating division, remainder takes the dividend's sign
        ("7 / 2", 3),
        ("-7 / 2", -3),
        ("-7 % 3", -1),
        ("7 % -3", 1),
        ("7u / 2u", UInt(3)),
        ("1.0 / 0.0", math.inf),
        ("-1.0 / 0.0", -math.inf),
        ("2 * 3 + 4 * 5", 26),
        ("(2 + 3) * 4", 20),
        ("--5", 5),
        ("!!true", True),
        ("'ab' + 'cd'", "abcd"),
        ("b'ab' + b'c'", b"abc"),
        ("[1] + [2, 3]", [1, 2, 3]),
        # comparisons, including int/uint/double across types
        ("1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 3", True),
        ("1 < 1.5", True),
        ("2u > 1", True),
        ("'abc' < 'abd'", True),
        ("false < true", True),
        ("b'a' < b'b'", True),
        ("dyn(1) == 1.0", True),
        ("dyn(1u) == 1", True),
        ("dyn('1') == 1", False),
        ("[1, 2] == [1, 2]", True),
        ("[1, 2] == [2, 1]", False),
        ("{'a': 1} == {'a': 1}", True),
        ("{'a': [1]} != {'a': [2]}", True),
        ("1 in [1, 2]", True),
        ("'k' in {'k': 1}", True),
        ("3 in [1, 2]", False),
        # conditional and logic
        ("true ? 'y' : 'n'", "y"),
        ("1 > 2 ? 'y' : 'n'", "n"),
        ("false || true && false", False),
        # errors are absorbed when the other operand decides (commutative && and ||)
        ("1 / 0 == 1 || true", True),
        ("true || 1 / 0 == 1", True),
        ("1 / 0 == 1 && false", False),
        ("false && {}['x']", False),
    ],
)
def test_expressions_evaluate_per_the_spec(expr: str, expected: Any) -> None:
    got = run(expr)
    assert got == expected
    assert type(got) is type(expected)


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("9223372036854775807 + 1", "integer overflow"),
        ("-9223372036854775808 - 1", "integer overflow"),
        ("9223372036854775807 * 2", "integer overflow"),
        ("-(-9223372036854775808)", "integer overflow"),
        ("-9223372036854775808 / -1", "integer overflow"),
        ("0u - 1u", "unsigned integer overflow"),
        ("18446744073709551615u + 1u", "unsigned integer overflow"),
        ("1 / 0", "division by zero"),
        ("1 % 0", "modulus by zero"),
        ("[1, 2][2]", "index '2' out of range in list size '2'"),
        ("{'a': 1}['b']", "no such key: b"),
        ("{'a': 1}.b", "no such key: b"),
        ("{'a': 1, 'a': 2}", "Failed with repeated key: a"),
        ("int('12x')", 'strconv.ParseInt: parsing "12x": invalid syntax'),
        ("int('99999999999999999999')", 'strconv.ParseInt: parsing "99999999999999999999": value out of range'),
        ("uint(-1)", "unsigned integer overflow"),
        ("int(1e19)", "integer overflow"),
        ("string(b'\\xff')", "invalid UTF-8 in bytes, cannot convert to string"),
        ("'abc'.substring(2, 1)", "invalid substring range. start: 2, end: 1"),
        ("'abc'.charAt(4)", "index out of range: 4"),
        ("[].max()", "max(list) argument must not be empty"),
        ("optional.none().value()", "optional.none() dereference"),
        # && / || do not absorb an error when the other side does not decide
        ("1 / 0 == 1 && true", "division by zero"),
        ("false || 1 / 0 == 1", "division by zero"),
        # exists_one, map and filter propagate errors; all/exists only when undecided
        ("[0, 1].exists_one(x, 1 / x == 1)", "division by zero"),
        ("[0, 1].map(x, 1 / x)", "division by zero"),
        ("[1, 0].all(x, 1 / x == 1)", "division by zero"),
        ("duration('1h') + duration('2562047h')", "integer overflow"),
        ("timestamp('9999-12-31T23:59:59Z') + duration('1s')", "timestamp overflow"),
    ],
)
def test_runtime_errors_carry_cel_gos_messages(expr: str, message: str) -> None:
    assert error_of(expr) == message


def test_dynamic_dispatch_without_a_matching_overload_is_no_such_overload() -> None:
    assert error_of("x + 1", x="a").startswith("no such overload")
    assert error_of("x ? 1 : 2", x=1).startswith("no such overload")
    assert error_of("x && true", x=1).startswith("no such overload")


def test_macros() -> None:
    assert run("[1, 2, 3].all(x, x > 0)") is True
    assert run("[1, 2, 3].all(x, x > 1)") is False
    assert run("[1, 0].all(x, x > 0 && 1 / x == 1)") is False  # a false decides despite the error
    assert run("[0, 1].exists(x, 1 / x == 1)") is True  # a true decides despite the error
    assert run("[1, 2, 3].exists_one(x, x == 2)") is True
    assert run("[1, 2, 2].exists_one(x, x == 2)") is False
    assert run("[1, 2, 3].map(x, x * x)") == [1, 4, 9]
    assert run("[1, 2, 3, 4].map(x, x % 2 == 0, x * 10)") == [20, 40]
    assert run("[1, 2, 3, 4].filter(x, x % 2 == 1)") == [1, 3]
    assert run("{'a': 1, 'b': 2}.all(k, k in ['a', 'b'])") is True  # maps range over their keys
    assert run("{'a': 1, 'b': 2}.map(k, k + k)") == ["aa", "bb"]
    assert run("[[1, 2], [3]].all(l, l.all(x, x < 4))") is True
    assert run("[1, 2].exists(x, [3, 4].exists(x, x == 4))") is True  # inner x shadows outer x
    assert run("has(m.a) && !has(m.b)", m={"a": None}) is True


def test_strings_library() -> None:
    assert run("'hello'.contains('ell') && 'hello'.startsWith('he') && 'hello'.endsWith('lo')") is True
    assert run("'café'.size()") == 4 and run("size(b'caf\\xc3\\xa9')") == 5  # code points vs bytes
    assert run("'abc-123'.matches('^[a-z]+-[0-9]+$')") is True
    assert run("'abc\\n'.matches('^abc$')") is False  # RE2's $ matches only at the very end
    assert run("'x1y22'.find('[0-9]+')") == "1"
    assert run("'x1y22z333'.findAll('[0-9]+')") == ["1", "22", "333"]
    assert run("'x1y22z333'.findAll('[0-9]+', 2)") == ["1", "22"]
    assert run("'Hello World'.lowerAscii()") == "hello world"
    assert run("'héllo'.upperAscii()") == "HéLLO"
    assert run("'  pad\\t'.trim()") == "pad"
    assert run("'a,b,,c'.split(',')") == ["a", "b", "", "c"]
    assert run("'a,b,c'.split(',', 2)") == ["a", "b,c"]
    assert run("['x', 'y'].join()") == "xy" and run("['x', 'y'].join(', ')") == "x, y"
    assert run("'banana'.indexOf('an')") == 1 and run("'banana'.indexOf('an', 2)") == 3
    assert run("'banana'.lastIndexOf('an')") == 3 and run("'banana'.lastIndexOf('an', 2)") == 1
    assert run("'aaa'.replace('a', 'b')") == "bbb" and run("'aaa'.replace('a', 'b', 2)") == "bba"
    assert run("'hello'.substring(1)") == "ello" and run("'hello'.substring(1, 3)") == "el"
    assert run("'hello'.charAt(1)") == "e" and run("'hello'.charAt(5)") == ""
    assert run("strings.quote('a\"b\\n')") == '"a\\"b\\n"'


def test_regular_expressions_run_in_linear_time_with_re2_semantics() -> None:
    # Python's backtracking `re` would take longer than the universe's age on this; RE2 does not
    assert run("s.matches('^(a+)+$')", s="a" * 500 + "!") is False
    assert run("s.matches('^(a|aa)*$')", s="a" * 500) is True
    dns = "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'"
    assert run(f"'my-host.example.com'.matches({dns})") is True
    assert run(f"'-bad.example.com'.matches({dns})") is False
    assert run("'(ab)(ab)c'.find('(?:ab)+?c')") == ""  # the literal parentheses do not match (?:ab)
    assert run("'ababc'.find('(?:ab)+?c')") == "ababc"
    assert run("'xAbCy'.find('(?i)[a-c]+')") == "AbC"
    assert run("'baaac'.findAll('a*')") == ["", "aaa", ""]  # Go skips an empty match right after a match
    assert run("'a1b22'.findAll('(\\\\d+)+')") == ["1", "22"]
    assert error_of("'a'.matches(p)", p="(a)\\1") == "error parsing regexp: invalid escape sequence: `\\1`"
    assert error_of("'a'.matches(p)", p="a**") == "error parsing regexp: invalid nested repetition operator: `**`"


def test_lists_and_sets_libraries() -> None:
    assert run("[1, 2, 2, 3].isSorted()") is True and run("[2, 1].isSorted()") is False
    assert run("[1, 2, 3].sum()") == 6 and run("[1.5, 2.5].sum()") == 4.0 and run("[].sum()") == 0
    assert run("[3, 1, 2].min()") == 1 and run("['b', 'c', 'a'].max()") == "c"
    assert run("[1, 2, 3, 2].indexOf(2)") == 1 and run("[1, 2, 3, 2].lastIndexOf(2)") == 3
    assert run("[1, 2].indexOf(9)") == -1
    assert run("sets.contains([1, 2, 3], [3, 1])") is True and run("sets.contains([1], [1, 2])") is False
    assert run("sets.equivalent([1, 2, 2], [2, 1])") is True
    assert run("sets.intersects([1, 2], [2, 3])") is True and run("sets.intersects([1], [2])") is False


def test_conversions_and_types() -> None:
    assert run("int('-42')") == -42 and run("int(3.9)") == 3 and run("int(-3.9)") == -3
    assert run("uint('42')") == UInt(42) and run("double('2.5')") == 2.5 and run("double(7)") == 7.0
    assert run("string(42)") == "42" and run("string(2u)") == "2" and run("string(true)") == "true"
    assert run("string(1.5)") == "1.5" and run("string(1e6)") == "1e+06" and run("string(0.0001)") == "0.0001"
    assert run("string(b'hi')") == "hi" and run("bytes('hi')") == b"hi"
    assert run("bool('true')") is True and run("bool('0')") is False
    assert run("type(1) == int && type(1u) == uint && type(1.0) == double") is True
    assert run("type('') == string && type(b'') == bytes && type(null) == null_type") is True
    assert run("type([]) == list && type({}) == map && type(true) == bool") is True
    assert run("type(type(1)) == type") is True
    assert run("type(x) == string ? x.endsWith('%') : x > 0", x="50%") is True  # int-or-string style
    assert run("type(x) == string ? x.endsWith('%') : x > 0", x=5) is True


def test_timestamps_and_durations() -> None:
    assert run("timestamp('2024-01-02T03:04:05Z')") == Timestamp(1704164645 * 10**9)
    assert run("string(timestamp('2024-01-02T03:04:05.120Z'))") == "2024-01-02T03:04:05.12Z"
    assert run("string(timestamp('2024-01-02T03:04:05+01:00'))") == "2024-01-02T02:04:05Z"
    assert run("duration('1h30m') == duration('90m')") is True
    assert run("string(duration('1.5s'))") == "1.5s" and run("string(duration('-2m'))") == "-120s"
    assert run("duration('1ms') < duration('1s')") is True
    assert run("timestamp('2024-01-01T00:00:00Z') + duration('36h')") == run("timestamp('2024-01-02T12:00:00Z')")
    assert run("timestamp('2024-01-02T00:00:00Z') - timestamp('2024-01-01T00:00:00Z')") == Duration(86400 * 10**9)
    assert run("timestamp('2024-01-01T00:00:00Z') < timestamp('2024-01-01T00:00:01Z')") is True
    ts = "timestamp('2024-03-10T15:04:05.678Z')"
    assert run(f"{ts}.getFullYear()") == 2024 and run(f"{ts}.getMonth()") == 2  # months count from 0
    assert run(f"{ts}.getDate()") == 10 and run(f"{ts}.getDayOfMonth()") == 9  # getDate counts from 1
    assert run(f"{ts}.getDayOfWeek()") == 0 and run(f"{ts}.getDayOfYear()") == 69  # a Sunday, from 0
    assert run(f"{ts}.getHours()") == 15 and run(f"{ts}.getMilliseconds()") == 678
    assert run(f"{ts}.getHours('America/New_York')") == 11 and run(f"{ts}.getHours('+05:30')") == 20
    assert run("duration('3h25m').getMinutes()") == 205 and run("duration('1.5s').getMilliseconds()") == 1500
    assert run("int(timestamp('1970-01-01T00:01:00Z'))") == 60 and run(
        "timestamp(60) == timestamp('1970-01-01T00:01:00Z')"
    )


def test_optionals() -> None:
    assert run("optional.of(1).hasValue() && !optional.none().hasValue()") is True
    assert run("optional.of(1).value()") == 1
    assert run("optional.none().orValue(7)") == 7 and run("optional.of(3).orValue(7)") == 3
    assert run("optional.none().or(optional.of(2)).value()") == 2
    assert run("optional.ofNonZeroValue('').hasValue()") is False
    assert run("m.?a.orValue(0)", m={"a": 5}) == 5 and run("m.?b.orValue(0)", m={"a": 5}) == 0
    assert run("m.?a.b.orValue('none')", m={"a": {"b": "x"}}) == "x"  # selection on an optional stays optional
    assert run("m.?x.b.orValue('none')", m={"a": {}}) == "none"
    assert run("[1, 2][?5].orValue(0)") == 0 and run("{'k': 1}[?'k'].value()") == 1
    assert run("[1, ?optional.none(), ?optional.of(3)]") == [1, 3]
    assert run("{'a': 1, ?'b': optional.none()}") == {"a": 1}
    assert run("optional.of(2).optMap(x, x * 10).value()") == 20
    assert run("optional.of(1).orValue(1 / 0)") == 1


def test_kubernetes_quantity_ip_cidr_url_libraries() -> None:
    assert run("quantity('1Gi') == quantity('1024Mi')") is True
    assert run("quantity('1.5').isGreaterThan(quantity('1500m'))") is False
    assert run("quantity('500m').compareTo(quantity('1'))") == -1
    assert run("quantity('2k').asInteger()") == 2000 and run("quantity('1e3').isInteger()") is True
    assert run("quantity('1Ki').add(quantity('24')).asInteger()") == 1048 and run("quantity('-5').sign()") == -1
    assert run("isQuantity('10Gi') && !isQuantity('ten')") is True
    assert run("ip('192.168.0.1').family() == 4 && ip('::1').isLoopback()") is True
    assert run("isIP('10.0.0.1') && !isIP('10.0.0.01') && !isIP('::ffff:1.2.3.4')") is True
    assert run("ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')") is True
    assert run("ip('fe80::1').isLinkLocalUnicast() && ip('224.0.0.1').isLinkLocalMulticast()") is True
    assert run("ip('10.1.2.3').isGlobalUnicast() && !ip('0.0.0.0').isGlobalUnicast()") is True
    assert run("cidr('10.0.0.0/8').containsIP('10.9.8.7') && !cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))") is True
    assert run("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && !cidr('10.1.0.0/16').containsCIDR('10.0.0.0/8')")
    assert run("string(cidr('10.1.2.3/8').masked())") == "10.0.0.0/8" and run("cidr('::/0').prefixLength()") == 0
    assert run("string(cidr('10.1.2.3/8').ip())") == "10.1.2.3" and run("isCIDR('10.0.0.0/33')") is False
    u = "url('https://user@example.com:8443/a%20b?x=1&x=2&y=')"
    assert run(f"{u}.getScheme()") == "https" and run(f"{u}.getHost()") == "example.com:8443"
    assert run(f"{u}.getHostname()") == "example.com" and run(f"{u}.getPort()") == "8443"
    assert run(f"{u}.getEscapedPath()") == "/a%20b" and run(f"{u}.getQuery()") == {"x": ["1", "2"], "y": [""]}
    assert run("url('https://[::1]:80/').getHostname()") == "::1" and run("isURL('/relative/ok')") is True
    assert run("isURL('no-scheme-or-slash')") is False
    assert error_of("quantity('1.5ki')") == "unable to parse quantity's suffix"
    assert error_of("quantity('1.5x')").startswith("quantities must match the regular expression")
    assert error_of("ip('1.2.3.4%eth0')") == 'IP address "1.2.3.4%eth0" with zone value is not allowed'


# ---------------------------------------------------------------------------- compile time


@pytest.mark.parametrize(
    ("expr", "rendered"),
    [
        (
            "self.x +",
            "ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' expecting an expression"
            "\n | self.x +\n | ........^",
        ),
        ("foo(1)", "ERROR: <input>:1:4: undeclared reference to 'foo' (in container '')\n | foo(1)\n | ...^"),
        (
            "[1, 'a']",
            "ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, 'a']\n | ....^",
        ),
        (
            "1 == 1.0",
            "ERROR: <input>:1:3: found no matching overload for '_==_' applied to '(int, double)'\n | 1 == 1.0\n | ..^",
        ),
        (
            "'a'.startsWith(1)",
            "ERROR: <input>:1:15: found no matching overload for 'startsWith' applied to 'string.(int)'"
            "\n | 'a'.startsWith(1)\n | ..............^",
        ),
        ("1 + 'a' == 'b'", "found no matching overload for '_+_' applied to '(int, string)'"),
        ("[1].all(x.y, true)", "argument must be a simple name"),
        ("has(x)", "invalid argument to has() macro"),
        ("1.all(x, true)", "expression of type 'int' cannot be range of a comprehension"),
        ("duration('1 hour')", 'invalid duration argument: time: unknown unit " hour" in duration "1 hour"'),
        ("timestamp('yesterday')", "invalid timestamp argument"),
        ("'a'.matches('(?=a)')", "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"),
        ("'a'.matches('(a')", "error parsing regexp: missing closing ): `(a`"),
        ("9223372036854775808", "error parsing int literal: value out of range"),
        ("self.namespace", "Syntax error: reserved identifier: namespace"),
        ("a = 1", "Syntax error: token recognition error at: '='"),
        ("'%s'.format(['x'])", "function 'format' is not supported by the embedded API server's CEL interpreter"),
    ],
)
def test_compile_errors_are_reported_like_cel_go(expr: str, rendered: str) -> None:
    assert rendered in compile_error(expr, {"self": DYN})


def test_schema_types_drive_checking_and_values() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "max-surge": {"type": "integer"},
                    "namespace": {"type": "string"},
                    "weight": {"type": "number"},
                    "data": {"type": "string", "format": "byte"},
                    "at": {"type": "string", "format": "date-time"},
                    "every": {"type": "string", "format": "duration"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "port": {"x-kubernetes-int-or-string": True},
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                },
            },
        },
    }
    self_t = decl_type(schema, resource_root=True)
    assert self_t is not None
    assert escape("max-surge") == "max__dash__surge" and escape("namespace") == "__namespace__"
    assert escape("a.b/c") == "a__dot__b__slash__c" and escape("x__y") == "x__underscores__y"
    assert escape("1st") is None and escape("has space") is None
    assert "undefined field 'nope'" in compile_error("self.spec.nope == 1", {"self": self_t})
    assert "undefined field 'labels'" in compile_error("self.metadata.labels == {}", {"self": self_t})
    assert "found no matching overload for '_+_' applied to '(int, string)'" in compile_error(
        "self.spec.max__dash__surge + 'x' == 'y'", {"self": self_t}
    )
    from kubeplane.cel.schema_types import converter

    convert = converter(schema, resource_root=True)
    assert convert is not None
    obj = {
        "apiVersion": "v1",
        "kind": "Thing",
        "metadata": {"name": "n", "labels": {"a": "b"}},
        "spec": {
            "max-surge": 2,
            "namespace": "ns",
            "weight": 1,
            "data": "aGk=",
            "at": "2024-01-01T00:00:00Z",
            "every": "1h",
            "labels": {"app.kubernetes.io/name": "x"},
            "port": "80%",
            "tags": ["b", "a"],
        },
    }
    value = convert(obj)
    env = {"self": self_t}
    assert run_typed("self.spec.max__dash__surge == 2 && self.spec.__namespace__ == 'ns'", env, self=value)
    assert run_typed("self.spec.weight * 1.5 == 1.5", env, self=value)  # a JSON 1 in a number field is a double
    assert run_typed("self.spec.data == b'hi'", env, self=value)
    assert run_typed("self.spec.at + self.spec.every == timestamp('2024-01-01T01:00:00Z')", env, self=value)
    assert run_typed("self.spec.labels['app.kubernetes.io/name'] == 'x'", env, self=value)
    assert run_typed("type(self.spec.port) == string", env, self=value)
    assert run_typed("self.spec.tags == ['a', 'b']", env, self=value)  # set lists compare without order
    assert run_typed("self.metadata.name == 'n' && self.kind == 'Thing'", env, self=value)


# ---------------------------------------------------------------------------- cost limit


def test_a_runaway_rule_is_stopped_by_the_cost_limit() -> None:
    program = compile_expr("self.all(a, self.all(b, self.all(c, a + b + c >= 0)))", {"self": DYN})
    assert program.eval({"self": list(range(10))})[0] is True
    with pytest.raises(CostExceeded):
        program.eval({"self": list(range(200))})  # 8 million iterations
    with pytest.raises(CostExceeded):
        run("'x'.size() > 0 && [1, 2, 3].map(x, x).size() > 0", limit=3)


# ---------------------------------------------------------------------------- formats and Go text


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("byte", ["aGVsbG8=", "YWJj"], ["hello!", "aGVsbG8", ""]),
        (
            "date-time",
            ["2024-01-02T03:04:05Z", "2024-01-02t03:04:05.5+01:00"],
            ["2024-01-02 03:04:05Z", "2024-13-01T00:00:00Z"],
        ),
        ("date", ["2024-02-29"], ["2023-02-29", "2024-1-1"]),
        ("duration", ["1h30m", "3 days", "500ms"], ["1 fortnight", "h"]),
        ("ipv4", ["10.0.0.1", "010.0.0.1"], ["10.0.0.256", "::1", "10.0.0"]),
        ("ipv6", ["::1", "2001:db8::ff00:42:8329"], ["10.0.0.1", "2001:db8::g"]),
        ("cidr", ["10.0.0.0/8", "fd00::/64"], ["10.0.0.0", "10.0.0.0/33"]),
        ("uuid", ["123e4567-e89b-12d3-a456-426614174000", "123E4567E89B12D3A456426614174000"], ["123e4567", "xyz"]),
        ("email", ["a@example.com", "Jane <jane@example.com>"], ["not-an-email", "a@", "@b.com"]),
        ("hostname", ["example.com", "a.b.c.io"], ["-bad.example.com", "under_score.com"]),
        ("mac", ["00:1a:2b:3c:4d:5e", "001a.2b3c.4d5e"], ["00:1a:2b:3c:4d", "zz:1a:2b:3c:4d:5e"]),
        ("uri", ["https://example.com/x", "/abs/path"], ["relative/path", "http://bad host/"]),
    ],
)
def test_string_formats_validate_like_kube_openapi(fmt: str, good: list[str], bad: list[str]) -> None:
    check = checker_for(fmt)
    assert check is not None
    for value in good:
        assert check(value), f"{fmt}: {value!r} should be valid"
    for value in bad:
        assert not check(value), f"{fmt}: {value!r} should be invalid"


def test_unknown_and_numeric_formats_are_ignored() -> None:
    assert checker_for("int32") is None and checker_for("int64") is None and checker_for("k8s-short-name") is None
    assert checker_for("my-custom-format") is None and checker_for("password") is not None


def test_go_renderings() -> None:
    assert go_quote('a"b\\c\n\x01é') == '"a\\"b\\\\c\\n\\x01é"'
    assert [go_format_g(v) for v in (1.0, 0.5, 123456.0, 1234567.0, 1e21, 1e-5, -2.5)] == [
        "1",
        "0.5",
        "123456",
        "1.234567e+06",
        "1e+21",
        "1e-05",
        "-2.5",
    ]


# ---------------------------------------------------------------------------- rules on schemas

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.min <= self.max", "message": "min must not exceed max", "fieldPath": ".min"},
                {"rule": "has(self.image)", "reason": "FieldValueRequired", "message": "image is required"},
            ],
            "properties": {
                "min": {"type": "integer"},
                "max": {"type": "integer"},
                "image": {"type": "string"},
                "owner": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "owner is immutable"}],
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                        "x-kubernetes-validations": [
                            {"rule": "self.port >= oldSelf.port", "message": "ports only grow"},
                        ],
                    },
                },
            },
        },
    },
}


def _obj(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x/v1", "kind": "T", "metadata": {"name": "t"}, "spec": spec}


def _messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def test_rules_evaluate_on_create_and_update() -> None:
    assert validate_object(SCHEMA, _obj(min=1, max=2, image="i"), None, []) == []
    assert _messages(validate_object(SCHEMA, _obj(min=3, max=2), None, [])) == [
        'spec.min: Invalid value: "object": min must not exceed max',
        "spec: Required value: image is required",
    ]
    assert _messages(validate_object(SCHEMA, _obj(min=1, image="i"), None, [])) == [
        'spec: Invalid value: "object": no such key: max evaluating rule: min must not exceed max'
    ]
    # transition rules only run on updates, against the correlated old value
    assert validate_object(SCHEMA, _obj(min=1, max=2, image="i", owner="b"), None, []) == []
    old = _obj(min=1, max=2, image="i", owner="a", ports=[{"name": "http", "port": 80}])
    new = _obj(min=1, max=2, image="i", owner="b", ports=[{"name": "web", "port": 1}, {"name": "http", "port": 79}])
    assert _messages(validate_object(SCHEMA, new, old, [])) == [
        'spec.owner: Invalid value: "string": owner is immutable',
        'spec.ports[1]: Invalid value: "object": ports only grow',  # matched by key, not position
    ]


def test_unchanged_values_only_warn_about_failing_rules() -> None:
    old = _obj(min=5, max=2, image="i")  # stored before the rule existed
    warnings: list[str] = []
    assert (
        validate_object(
            SCHEMA, {**_obj(min=5, max=2, image="i"), "metadata": {"name": "t", "labels": {}}}, old, [], warnings
        )
        == []
    )
    assert warnings == ['spec.min: Invalid value: "object": min must not exceed max']
    changed = validate_object(SCHEMA, _obj(min=6, max=2, image="i"), old, [], [])
    assert _messages(changed) == ['spec.min: Invalid value: "object": min must not exceed max']


def test_rules_at_the_root_see_apiversion_kind_and_name() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "x-kubernetes-validations": [
            {
                "rule": "self.metadata.name.startsWith(self.kind.lowerAscii())",
                "message": "name must start with the kind",
            },
            {"rule": "has(self.spec.max__dash__surge)", "message": "max-surge is required", "fieldPath": ".spec"},
        ],
        "properties": {"spec": {"type": "object", "properties": {"max-surge": {"type": "integer"}}}},
    }
    ok = {"apiVersion": "x/v1", "kind": "T", "metadata": {"name": "t1"}, "spec": {"max-surge": 1}}
    assert validate_object(schema, ok, None, []) == []
    bad = {"apiVersion": "x/v1", "kind": "T", "metadata": {"name": "x1"}, "spec": {}}
    assert _messages(validate_object(schema, bad, None, [])) == [
        '<nil>: Invalid value: "object": name must start with the kind',  # the root has no field path
        'spec: Invalid value: "object": max-surge is required',
    ]


def test_rules_inside_all_of_apply_to_the_nodes_own_values() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "allOf": [
                    {"x-kubernetes-validations": [{"rule": "self.a < self.b", "message": "a must be below b"}]},
                    {"properties": {"a": {"x-kubernetes-validations": [{"rule": "self > 0", "message": "positive"}]}}},
                ],
            }
        },
    }
    assert validate_object(schema, _obj(a=1, b=2), None, []) == []
    assert _messages(validate_object(schema, _obj(a=0, b=0), None, [])) == [
        'spec: Invalid value: "object": a must be below b',
        'spec.a: Invalid value: "integer": positive',
    ]


def test_blocking_schema_errors_keep_rules_from_running() -> None:
    from kubeplane.errors import required

    errs = validate_object(SCHEMA, _obj(min=3, max=2), None, [required("spec.other")])
    assert _messages(errs) == [
        '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; '
        "correct the existing errors to complete validation"
    ]


def test_crd_time_checks_name_the_rule_and_what_is_wrong() -> None:
    bad: dict[str, Any] = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer"},
                    "list": {
                        "type": "array",
                        "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
                    },
                },
                "x-kubernetes-validations": [
                    {"rule": "self.b > 1"},
                    {"rule": "self.a"},
                    {"rule": "self.a > 1", "messageExpression": "self.a"},
                    {"rule": "self.a > 1", "reason": "FieldValueBogus"},
                    {"rule": "self.a > 1", "fieldPath": ".nope"},
                    {"rule": "self.a > 1", "optionalOldSelf": True},
                    {"rule": ""},
                ],
            }
        },
    }
    got = _messages(crd_rule_errors(bad, "spec.versions[0].schema.openAPIV3Schema"))
    base = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    assert got[:4] == [
        f'{base}[3].reason: Unsupported value: "FieldValueBogus": supported values: '
        '"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
        f'{base}[4].fieldPath: Invalid value: ".nope": fieldPath must be a valid path',
        f"{base}[6].rule: Required value: rule is not specified",
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[list].items.x-kubernetes-validations"
        '[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the '
        "schema within spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[list]",
    ]
    fixed = copy.deepcopy(bad)
    spec = fixed["properties"]["spec"]
    spec["x-kubernetes-validations"] = [
        *spec["x-kubernetes-validations"][:3],
        {"rule": "self.a > 1", "optionalOldSelf": True},
    ]
    del fixed["properties"]["spec"]["properties"]["list"]
    got = _messages(crd_rule_errors(fixed, "s"))
    rule0 = (
        'apiextensions.ValidationRule{Rule:"self.b > 1", Message:"", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}'
    )
    assert got[0] == (
        f"s.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {rule0}: compilation failed: "
        "ERROR: <input>:1:5: undefined field 'b'\n | self.b > 1\n | ....^"
    )
    assert got[1].endswith("x-kubernetes-validations[1].rule: Invalid value: " + got[1].split("Invalid value: ")[1])
    assert got[1].endswith(": cel expression must evaluate to a bool")
    assert got[2].endswith(": messageExpression must evaluate to a string")
    assert got[3] == (
        "s.properties[spec].x-kubernetes-validations[3].optionalOldSelf: Invalid value: true: "
        "may not be set if oldSelf is not used in rule"
    )
    assert len(got) == 4
