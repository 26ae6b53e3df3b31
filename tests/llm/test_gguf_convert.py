"""Converting a GGUF reads each file once: ``_gguf_read_once`` hands transformers one ``gguf.GGUFReader`` per
file and one tensor-name map per architecture, and puts gguf's own back afterwards."""

from __future__ import annotations

import pytest

gguf = pytest.importorskip("gguf", reason="the models extra (pip install 'sqlmend[models]')")


def _tiny(path):
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(2)
    writer.add_tensor("token_embd.weight", np.arange(12, dtype=np.float32).reshape(3, 4))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_one_reader_per_file_and_gguf_put_back(tmp_path):
    from sqlmend.llm.local import _gguf_read_once

    one, two = _tiny(tmp_path / "one.gguf"), _tiny(tmp_path / "two.gguf")
    reader, names = gguf.GGUFReader, gguf.get_tensor_name_map
    with _gguf_read_once():
        from gguf import GGUFReader, get_tensor_name_map  # as transformers imports them, inside its functions

        first = GGUFReader(one)
        assert GGUFReader(str(one)) is first and GGUFReader(two) is not first
        assert [t.name for t in first.tensors] == ["token_embd.weight"]
        arch = next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == "llama")
        assert get_tensor_name_map(arch, 2) is get_tensor_name_map(arch, 2)
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader, names)
    assert gguf.GGUFReader(one) is not gguf.GGUFReader(one)  # gguf's own again: a new reader each call
