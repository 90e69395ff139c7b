from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.alert_rule import AlertRule
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    *,
    body: AlertRule,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/alerts/rules",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AlertRule | Problem | None:
    if response.status_code == 201:
        response_201 = AlertRule.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 408:
        response_408 = Problem.from_dict(response.json())

        return response_408

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Problem.from_dict(response.json())

        return response_415

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 431:
        response_431 = Problem.from_dict(response.json())

        return response_431

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[AlertRule | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: AlertRule,
) -> Response[AlertRule | Problem]:
    """Create an alert rule.

     Validated, stored durably, then evaluated from the next tick. Its firing and resolved
    events are posted to `webhook_url`, signed in `Wharf-Signature` with the rule's `secret`
    (or the server's). The answer never shows the secret. Needs `admin:*`. In a cluster the
    rule is cluster metadata, created through the controller leader (any node forwards
    there) and listed on every node once it has applied it; the controller leader evaluates
    it and posts its events.

    Args:
        body (AlertRule): An alert rule as the API takes and shows it. Unknown fields are refused,
            as in every
            request body of the API. Check it with [`AlertRule::validate`].

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AlertRule | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: AlertRule,
) -> AlertRule | Problem | None:
    """Create an alert rule.

     Validated, stored durably, then evaluated from the next tick. Its firing and resolved
    events are posted to `webhook_url`, signed in `Wharf-Signature` with the rule's `secret`
    (or the server's). The answer never shows the secret. Needs `admin:*`. In a cluster the
    rule is cluster metadata, created through the controller leader (any node forwards
    there) and listed on every node once it has applied it; the controller leader evaluates
    it and posts its events.

    Args:
        body (AlertRule): An alert rule as the API takes and shows it. Unknown fields are refused,
            as in every
            request body of the API. Check it with [`AlertRule::validate`].

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AlertRule | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: AlertRule,
) -> Response[AlertRule | Problem]:
    """Create an alert rule.

     Validated, stored durably, then evaluated from the next tick. Its firing and resolved
    events are posted to `webhook_url`, signed in `Wharf-Signature` with the rule's `secret`
    (or the server's). The answer never shows the secret. Needs `admin:*`. In a cluster the
    rule is cluster metadata, created through the controller leader (any node forwards
    there) and listed on every node once it has applied it; the controller leader evaluates
    it and posts its events.

    Args:
        body (AlertRule): An alert rule as the API takes and shows it. Unknown fields are refused,
            as in every
            request body of the API. Check it with [`AlertRule::validate`].

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AlertRule | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: AlertRule,
) -> AlertRule | Problem | None:
    """Create an alert rule.

     Validated, stored durably, then evaluated from the next tick. Its firing and resolved
    events are posted to `webhook_url`, signed in `Wharf-Signature` with the rule's `secret`
    (or the server's). The answer never shows the secret. Needs `admin:*`. In a cluster the
    rule is cluster metadata, created through the controller leader (any node forwards
    there) and listed on every node once it has applied it; the controller leader evaluates
    it and posts its events.

    Args:
        body (AlertRule): An alert rule as the API takes and shows it. Unknown fields are refused,
            as in every
            request body of the API. Check it with [`AlertRule::validate`].

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AlertRule | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
