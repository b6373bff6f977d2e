"""What the tasks get to open S3 as the driver does: every setting the driver's client was built
from, whichever place gave it (the run's Spark settings over the AWS variables), since a task's
process may have none of them (a Spark Connect server's executors)."""
import pytest

from bleu_spark.store import filesystems

VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION",
             "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


@pytest.fixture
def clean(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch
    filesystems.configure({})


def in_a_task(monkeypatch, given):
    """The options a task's S3 client is built with, in a process without the AWS variables."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return filesystems.s3_options(dict(given))


@pytest.mark.parametrize("endpoint_variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"])
@pytest.mark.parametrize("region_variable", ["AWS_REGION", "AWS_DEFAULT_REGION"])
def test_the_aws_variables_reach_the_tasks(clean, endpoint_variable, region_variable):
    clean.setenv(endpoint_variable, "http://127.0.0.1:9000")
    clean.setenv(region_variable, "eu-west-3")
    clean.setenv("AWS_ACCESS_KEY_ID", "id")
    clean.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    clean.setenv("AWS_SESSION_TOKEN", "token")
    filesystems.configure({})
    driver = filesystems.s3_options()
    given = filesystems.settings()
    task = in_a_task(clean, given)
    assert task["endpoint_override"] == driver["endpoint_override"] == "127.0.0.1:9000"
    assert task["scheme"] == "http" and task["region"] == "eu-west-3"
    assert (task["access_key"], task["secret_key"], task["session_token"]) == ("id", "secret", "token")


def aws_variables(monkeypatch):
    for name, value in {"AWS_ENDPOINT_URL": "http://env:1", "AWS_ENDPOINT_URL_S3": "http://env-s3:2",
                        "AWS_REGION": "env-region", "AWS_ACCESS_KEY_ID": "env-id",
                        "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_SESSION_TOKEN": "env-token"}.items():
        monkeypatch.setenv(name, value)


def test_the_s3_endpoint_variable_wins_over_the_general_one(clean):
    aws_variables(clean)
    filesystems.configure({})
    assert in_a_task(clean, filesystems.settings())["endpoint_override"] == "env-s3:2"


def test_the_spark_settings_win_and_keys_are_never_mixed(clean):
    aws_variables(clean)
    filesystems.configure({"spark.hadoop.fs.s3a.endpoint": "https://conf:3",
                           "spark.hadoop.fs.s3a.endpoint.region": "conf-region",
                           "spark.hadoop.fs.s3a.path.style.access": "false",
                           "spark.hadoop.fs.s3a.access.key": "conf-id",
                           "spark.hadoop.fs.s3a.secret.key": "conf-secret"})
    task = in_a_task(clean, filesystems.settings())
    assert (task["endpoint_override"], task["scheme"], task["region"]) == ("conf:3", "https", "conf-region")
    assert (task["access_key"], task["secret_key"]) == ("conf-id", "conf-secret")
    assert "session_token" not in task and task["force_virtual_addressing"] is True


def test_no_variables_no_settings(clean):
    filesystems.configure({})
    assert filesystems.settings() == {}
