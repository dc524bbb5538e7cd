"""A fake Stripe for the billing tests: localstripe (pinned by scripts/setup-tests.d/80-localstripe),
in memory, plus the two resources it lacks, Checkout Sessions and Billing Portal sessions,
kept in localstripe's own store beside its customers, plans and subscriptions.

    python stripe.py PORT

- POST /v1/checkout/sessions, POST /v1/billing_portal/sessions: as Stripe takes them
  (form-encoded, bearer sk_ key); the customer and the price (a localstripe plan) must exist.
- POST /_config/checkout/{id}/complete: the user "pays": a card becomes the customer's
  default payment method, localstripe makes the subscription (sending its own signed
  `customer.subscription.created`), and `checkout.session.completed` is sent, signed by
  localstripe's webhook code exactly as for its own events.
- /_slow/...: every request there waits 5 s first (a provider slower than the timeout).
- GET /pay/{id}, GET /portal/{id}: the hosted pages, a line of HTML each.

localstripe signs and sends webhooks itself (`POST /_config/webhooks/{id}` registers one).
It writes its store to /tmp/localstripe.pickle after each change; that is turned off here,
so tests running at once never share a store.
"""

import asyncio
import sys

from aiohttp import web

from localstripe import resources
from localstripe.errors import UserError

resources.Store.dump_to_disk = lambda self: None

from localstripe import server  # noqa: E402  (after the store is made memory-only)
from localstripe.resources import (  # noqa: E402
    Customer, Event, PaymentMethod, Plan, StripeObject, Subscription)
from localstripe.webhooks import schedule_webhook  # noqa: E402


class CheckoutSession(StripeObject):
    object = 'checkout.session'
    _id_prefix = 'cs_test_'

    def __init__(self, base, customer=None, client_reference_id=None, mode=None,
                 line_items=None, success_url=None, cancel_url=None, metadata=None,
                 subscription_data=None, **kwargs):
        if kwargs:
            raise UserError(400, 'Unexpected ' + ', '.join(kwargs.keys()))
        try:
            assert mode == 'subscription'
            assert type(customer) is str and customer.startswith('cus_')
            assert type(line_items) is list and len(line_items) == 1
            assert type(line_items[0].get('price')) is str
            assert success_url and cancel_url
        except AssertionError:
            raise UserError(400, 'Bad request')
        Customer._api_retrieve(customer)  # 404 if there is none
        Plan._api_retrieve(line_items[0]['price'])  # 404 if there is none
        super().__init__()
        self.customer = customer
        self.client_reference_id = client_reference_id
        self.mode = mode
        self.metadata = metadata or {}
        self.status = 'open'
        self.subscription = None
        self.success_url = success_url
        self.url = '%s/pay/%s' % (base, self.id)
        self._price = line_items[0]['price']
        self._subscription_metadata = (subscription_data or {}).get('metadata', {})


class PortalSession(StripeObject):
    object = 'billing_portal.session'
    _id_prefix = 'bps_'

    def __init__(self, base, customer=None, return_url=None, **kwargs):
        if kwargs or not return_url:
            raise UserError(400, 'Bad request')
        Customer._api_retrieve(customer)
        super().__init__()
        self.customer = customer
        self.return_url = return_url
        self.url = '%s/portal/%s' % (base, self.id)


def base_of(request):
    return '%s://%s' % (request.scheme, request.host)


async def create_checkout(request):
    data = await server.get_post_data(request) or {}
    return web.json_response(CheckoutSession(base_of(request), **data)._export())


async def create_portal(request):
    data = await server.get_post_data(request) or {}
    return web.json_response(PortalSession(base_of(request), **data)._export())


async def complete_checkout(request):
    session = CheckoutSession._api_retrieve(request.match_info['id'])
    card = PaymentMethod(type='card', card={
        'number': '4242424242424242', 'exp_month': '12', 'exp_year': '2040', 'cvc': '123'})
    PaymentMethod._api_attach(card.id, customer=session.customer)
    Customer._api_update(session.customer, invoice_settings={
        'default_payment_method': card.id})
    subscription = Subscription(customer=session.customer,
                                items=[{'plan': session._price}],
                                metadata=session._subscription_metadata)
    session.subscription = subscription.id
    session.status = 'complete'
    schedule_webhook(Event('checkout.session.completed', session))
    return web.json_response(session._export())


async def page(request):
    return web.Response(text='<h1>%s</h1>' % request.match_info['id'],
                        content_type='text/html')


@web.middleware
async def slow(request, handler):
    if request.path.startswith('/_slow/'):
        await asyncio.sleep(5)
        raise UserError(503, 'slow')
    return await handler(request)


def main():
    app = server.app
    app.middlewares.insert(0, slow)
    app.router.add_post('/v1/checkout/sessions', create_checkout)
    app.router.add_post('/v1/billing_portal/sessions', create_portal)
    app.router.add_post('/_config/checkout/{id}/complete', complete_checkout)
    app.router.add_get('/pay/{id}', page)
    app.router.add_get('/portal/{id}', page)
    web.run_app(app, host='127.0.0.1', port=int(sys.argv[1]), print=None)


if __name__ == '__main__':
    main()
