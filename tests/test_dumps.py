"""Shape dumps read whole, cut short, or holding non-literal reprs."""

from ledger.parsers.dumps import parse_dict_repr, parse_keyvalue_repr


def test_complete_dict():
    items, complete = parse_dict_repr("{'model': 'm', 'tensor_parallel_size': 2, 'served_model_name': ['x']}")
    assert complete and items == {"model": "m", "tensor_parallel_size": 2, "served_model_name": ["x"]}


def test_dict_cut_short_drops_the_cut_item_only():
    items, complete = parse_dict_repr("{'host': '0.0.0.0', 'port': 8001, 'allow_credentials': Fa")
    assert not complete
    assert items == {"host": "0.0.0.0", "port": 8001}


def test_dict_cut_inside_a_nested_repr():
    items, complete = parse_dict_repr("{'max_num_seqs': 256, 'attention_config': AttentionConfig(backend=None, flash_")
    assert items == {"max_num_seqs": 256} and not complete


def test_non_literal_values_are_kept_as_text():
    items, complete = parse_dict_repr("{'kv_transfer_config': KVTransferConfig(kv_role='kv_both'), 'seed': 0}")
    assert complete
    assert items == {"kv_transfer_config": "KVTransferConfig(kv_role='kv_both')", "seed": 0}


def test_quotes_and_brackets_inside_strings_do_not_split():
    items, _ = parse_dict_repr("{'chat_template': 'a, b {c}', 'n': 1}")
    assert items == {"chat_template": "a, b {c}", "n": 1}


def test_engine_config_whose_last_item_may_be_cut_is_dropped():
    items, complete = parse_keyvalue_repr("model='m', tensor_parallel_size=1, disable_custom_")
    assert items == {"model": "m", "tensor_parallel_size": 1} and not complete


def test_engine_config_ending_in_a_closed_bracket_is_complete():
    items, complete = parse_keyvalue_repr('model=\'m\', max_seq_len=4096, compilation_config={"level":3}')
    assert complete and items["max_seq_len"] == 4096 and items["compilation_config"] == {"level": 3}


def test_namespace_with_closing_parenthesis():
    items, complete = parse_keyvalue_repr("host='0.0.0.0', port=8000, tensor_parallel_size=3)", close=")")
    assert complete and items == {"host": "0.0.0.0", "port": 8000, "tensor_parallel_size": 3}
