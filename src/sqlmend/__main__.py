"""``python -m sqlmend``: the command line (as the ``sqlmend`` script), e.g. for an agent's MCP configuration."""

from sqlmend.cli import main

if __name__ == "__main__":
    main()
