"""conf/ files as written: the YAML value writer ``fit --write`` uses keeps everything but the values."""

import pytest
import yaml

from dabench.config.files import with_values

PRESET = """# @package hardware
defaults: [base]
options:
  pcu_efficiency: 0.71   # fitted: conf/hardware/sources/rdu.yaml
  # the compiler's overlap
  overlap: 0.5
  nested: {a: 1}
other:
  pcu_efficiency: 3
"""


def test_values_are_replaced_where_they_stand_and_the_rest_is_kept(tmp_path):
    path = tmp_path / "rdu.yaml"
    path.write_text(PRESET)
    text = with_values(path, {"options.pcu_efficiency": "0.654321", "options.overlap": "0.25"})
    assert text == PRESET.replace("0.71 ", "0.654321 ").replace("overlap: 0.5", "overlap: 0.25")
    data = yaml.safe_load(text)
    assert data["options"] == {"pcu_efficiency": 0.654321, "overlap": 0.25, "nested": {"a": 1}}
    assert data["other"]["pcu_efficiency"] == 3


@pytest.mark.parametrize("key", ["options.missing", "options.nested", "options.pcu_efficiency.x", "nothing"])
def test_a_key_that_is_no_value_of_the_file_is_refused(tmp_path, key):
    path = tmp_path / "rdu.yaml"
    path.write_text(PRESET)
    with pytest.raises(KeyError, match=f"rdu.yaml: no value {key}"):
        with_values(path, {key: "1"})
