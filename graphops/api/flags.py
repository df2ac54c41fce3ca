"""gp.flags / gp.app.flags: the part of TF1's (absl's) command-line flags TF1 programs use.

    gp.flags.DEFINE_string("data_dir", "/tmp/data", "Where the data is.")
    FLAGS = gp.flags.FLAGS
    gp.app.run(main)          # parses --data_dir=... from sys.argv, then calls main(argv)

DEFINE_string / DEFINE_integer / DEFINE_float / DEFINE_boolean (DEFINE_bool). Flags are
`--name=value` or `--name value`; a boolean also `--name` / `--noname`. Unlike absl,
reading a flag before parsing gives its default, and there is no --help or flag file.
"""


def _parse_bool(text):
    lowered = text.lower()
    if lowered in ("true", "t", "1"):
        return True
    if lowered in ("false", "f", "0"):
        return False
    raise ValueError(f"Non-boolean argument to boolean flag: {text!r}")


class _Flag:
    __slots__ = ("name", "parse", "value", "help")

    def __init__(self, name, parse, default, help_text):
        self.name, self.parse, self.help = name, parse, help_text
        self.value = default if default is None or isinstance(default, parse) else \
            self.parse_text(str(default))

    def parse_text(self, text):
        try:
            return _parse_bool(text) if self.parse is bool else self.parse(text)
        except ValueError as e:
            raise ValueError(f"Illegal value for flag --{self.name}: {text!r} ({e})") from None


class FlagValues:
    """The flag registry (`FLAGS`): attributes are the flags' values; calling it with an argv
    parses that argv and returns what is not a known flag (argv[0] kept)."""

    def __init__(self):
        object.__setattr__(self, "_flags", {})

    def _define(self, name, parse, default, help_text):
        if name in self._flags:
            raise ValueError(f"The flag {name!r} is defined twice.")
        self._flags[name] = _Flag(name, parse, default, help_text)

    def __getattr__(self, name):
        flag = self._flags.get(name)
        if flag is None:
            raise AttributeError(name)
        return flag.value

    def __setattr__(self, name, value):
        if name not in self._flags:
            raise AttributeError(f"Unknown flag: {name!r}")
        self._flags[name].value = value

    def __contains__(self, name):
        return name in self._flags

    def __call__(self, argv, known_only=True):
        rest, args = [argv[0]], list(argv[1:])
        while args:
            arg = args.pop(0)
            if arg == "--":
                rest.extend(args)
                break
            name, has_value, text = arg.lstrip("-").partition("=")
            flag = self._flags.get(name) if arg.startswith("-") else None
            if flag is None and name.startswith("no") and not has_value:
                negated = self._flags.get(name[2:])
                if negated is not None and negated.parse is bool and arg.startswith("-"):
                    negated.value = False
                    continue
            if flag is None:
                if not known_only and arg.startswith("-"):
                    raise ValueError(f"Unknown command line flag {name!r}")
                rest.append(arg)
            elif flag.parse is bool and not has_value:
                flag.value = True
            else:
                if not has_value:
                    if not args:
                        raise ValueError(f"Flag --{name} needs a value")
                    text = args.pop(0)
                flag.value = flag.parse_text(text)
        return rest


FLAGS = FlagValues()


def DEFINE_string(name, default, help, flag_values=FLAGS):  # noqa: A002 (absl's names)
    flag_values._define(name, str, default, help)


def DEFINE_integer(name, default, help, flag_values=FLAGS):  # noqa: A002
    flag_values._define(name, int, default, help)


def DEFINE_float(name, default, help, flag_values=FLAGS):  # noqa: A002
    flag_values._define(name, float, default, help)


def DEFINE_boolean(name, default, help, flag_values=FLAGS):  # noqa: A002
    flag_values._define(name, bool, default, help)


DEFINE_bool = DEFINE_boolean
