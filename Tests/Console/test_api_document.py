"""The API document the server writes from its code: valid OpenAPI 3.1, and
the answers the server really gives match the schemas it states for them."""

import jsonschema
import pytest
from openapi_spec_validator import validate

from conftest import DISPATCHER, DRIVER, running_server


@pytest.fixture(scope="module")
def server():
    """A server of its own: signing the dispatcher in through the API here
    would spend the code the shared server's browser sign-in asks for."""
    yield from running_server()


def document(server):
    status, body = server.api("GET", "/openapi.json")
    assert status == 200
    return body


def closed(value):
    """The schema with every object closed to keys it does not state, so an
    answer carrying an undocumented field fails too."""
    if isinstance(value, dict):
        value = {key: closed(member) for key, member in value.items()}
        if "properties" in value:
            value["additionalProperties"] = False
        return value
    if isinstance(value, list):
        return [closed(member) for member in value]
    return value


def answer_schema(doc, method, path, status="200"):
    """The stated schema of an answer (closed), resolvable against the document's components."""
    content = doc["paths"][path][method]["responses"][status]["content"]
    return closed(dict(next(iter(content.values()))["schema"], components=doc["components"]))


def test_the_document_is_valid_openapi_3_1(server):
    doc = document(server)
    validate(doc)
    assert doc["openapi"] == "3.1.0"
    assert len(doc["paths"]) > 60


def test_real_answers_match_the_schemas_the_document_states(server):
    doc = document(server)
    driver = server.api_sign_in(DRIVER)
    dispatcher = server.api_sign_in(DISPATCHER)
    checked = 0
    for token, path, template in [
        (driver, "/v1/me", "/v1/me"),
        (driver, "/v1/trips", "/v1/trips"),
        (driver, "/v1/orders", "/v1/orders"),
        (driver, "/v1/notifications", "/v1/notifications"),
        (driver, "/v1/equipment", "/v1/equipment"),
        (driver, "/v1/sync?since=0", "/v1/sync"),
        (dispatcher, "/v1/dispatch/drivers", "/v1/dispatch/drivers"),
        (dispatcher, "/v1/dispatch/trips", "/v1/dispatch/trips"),
        (dispatcher, "/v1/dispatch/orders", "/v1/dispatch/orders"),
        (dispatcher, "/v1/dispatch/equipment", "/v1/dispatch/equipment"),
        (dispatcher, "/v1/dispatch/positions", "/v1/dispatch/positions"),
    ]:
        status, body = server.api("GET", path, token=token)
        assert status == 200, (path, body)
        jsonschema.validate(body, answer_schema(doc, "get", template), cls=jsonschema.Draft202012Validator)
        checked += 1
    # An error answer has the stated error shape.
    status, body = server.api("GET", "/v1/trips/not-a-uuid", token=driver)
    assert status == 400
    jsonschema.validate(body, answer_schema(doc, "get", "/v1/trips/{id}", "400"), cls=jsonschema.Draft202012Validator)
    assert checked == 11
