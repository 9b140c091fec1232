using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Foundation;

/// <summary>Keys against the real customer (GET /jobs) and worker (POST /next) endpoints.</summary>
public sealed class AuthTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    private static readonly Uri Jobs = new("/jobs", UriKind.Relative);
    private static readonly Uri Next = new("/next", UriKind.Relative);

    [Fact]
    public async Task A_request_without_a_key_gets_401_with_a_problem_details_body()
    {
        var r = await fx.Api.ClientWithKey(null).GetAsync(Jobs);
        await AssertProblemAsync(r, HttpStatusCode.Unauthorized);
        Assert.Contains("Bearer", r.Headers.WwwAuthenticate.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task An_unknown_key_gets_401()
    {
        var r = await fx.Api.ClientWithKey("qc_this-key-does-not-exist-anywhere").GetAsync(Jobs);
        await AssertProblemAsync(r, HttpStatusCode.Unauthorized);
    }

    [Fact]
    public async Task A_revoked_key_gets_401()
    {
        var (_, key) = await fx.NewCustomerAsync();
        Assert.Equal(HttpStatusCode.OK, (await fx.Api.ClientWithKey(key).GetAsync(Jobs)).StatusCode);
        var principal = await fx.Keys.ResolveAsync(key, default);
        await fx.Keys.RevokeAsync(principal!.KeyId, default);
        await AssertProblemAsync(await fx.Api.ClientWithKey(key).GetAsync(Jobs), HttpStatusCode.Unauthorized);
    }

    [Fact]
    public async Task A_worker_key_on_a_customer_endpoint_gets_403()
    {
        var worker = await fx.NewWorkerKeyAsync();
        await AssertProblemAsync(await fx.Api.ClientWithKey(worker).GetAsync(Jobs), HttpStatusCode.Forbidden);
    }

    [Fact]
    public async Task A_customer_key_on_a_worker_endpoint_gets_403()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var r = await fx.Api.ClientWithKey(key).PostAsync(Next, JsonContent.Create(new { max = 1 }));
        await AssertProblemAsync(r, HttpStatusCode.Forbidden);
    }

    private static async Task AssertProblemAsync(HttpResponseMessage r, HttpStatusCode expected)
    {
        Assert.Equal(expected, r.StatusCode);
        Assert.Equal("application/problem+json", r.Content.Headers.ContentType?.MediaType);
        var body = await r.Content.ReadFromJsonAsync<JsonElement>();
        Assert.Equal((int)expected, body.GetProperty("status").GetInt32());
        Assert.False(string.IsNullOrEmpty(body.GetProperty("title").GetString()));
    }
}
