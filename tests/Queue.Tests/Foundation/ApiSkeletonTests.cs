using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Foundation;

public sealed class ApiSkeletonTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task Health_readiness_openapi_and_metrics_answer_without_a_key()
    {
        var http = fx.Api.ClientWithKey(null);
        Assert.Equal(HttpStatusCode.OK, (await http.GetAsync(new Uri("/healthz", UriKind.Relative))).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await http.GetAsync(new Uri("/readyz", UriKind.Relative))).StatusCode);
        var openapi = await http.GetFromJsonAsync<JsonElement>(new Uri("/openapi/v1.json", UriKind.Relative));
        Assert.True(openapi.TryGetProperty("paths", out _));
        var metrics = await http.GetStringAsync(new Uri("/metrics", UriKind.Relative));
        Assert.Contains("queue_leases_expired_total", metrics, StringComparison.Ordinal);
        Assert.Contains("http_request_duration_seconds", metrics, StringComparison.Ordinal);
    }

    [Fact]
    public async Task An_unknown_route_gets_a_404_problem_details_body()
    {
        var r = await fx.Api.ClientWithKey(null).GetAsync(new Uri("/no-such-thing", UriKind.Relative));
        Assert.Equal(HttpStatusCode.NotFound, r.StatusCode);
        Assert.Equal("application/problem+json", r.Content.Headers.ContentType?.MediaType);
        var body = await r.Content.ReadFromJsonAsync<JsonElement>();
        Assert.Equal(404, body.GetProperty("status").GetInt32());
    }
}
