"""User-facing errors: the CLI prints their message on one line and exits with code 2."""


class ClirbenchError(ValueError):
    """A problem with the user's input (task, language, model, file): never a bug."""


class UnknownNameError(ClirbenchError, LookupError):
    """An unknown task, scenario, language, measure or retriever."""


class DataNotFoundError(ClirbenchError, FileNotFoundError):
    """A data set's files are not where they should be."""


class MalformedDataError(ClirbenchError):
    """A file exists but does not have the expected format or content."""
