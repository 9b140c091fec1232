using System.Net;
using System.Net.Http.Headers;
using System.Text;
using Queue.Core.Security;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

public sealed class RateLimitTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task A_tenant_over_its_rate_limit_gets_429_with_retry_after_and_other_tenants_are_not_affected()
    {
        var (_, slow) = await fx.NewCustomerAsync(settings: new TenantSettings(["text"], RateLimit: 1, RateBurst: 2));
        var (_, other) = await fx.NewCustomerAsync(settings: new TenantSettings(["text"], RateLimit: 1, RateBurst: 2));
        var http = fx.Api.ClientWithKey(slow);
        var statuses = new List<HttpResponseMessage>();
        for (var i = 0; i < 5; i++)
        {
            statuses.Add(await http.GetAsync(U("/jobs")));
        }
        var rejected = statuses.First(r => r.StatusCode == HttpStatusCode.TooManyRequests);
        await AssertProblemAsync(rejected, HttpStatusCode.TooManyRequests);
        Assert.True(rejected.Headers.RetryAfter?.Delta >= TimeSpan.FromSeconds(1));
        Assert.Equal(HttpStatusCode.OK, statuses[0].StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await fx.Api.ClientWithKey(other).GetAsync(U("/jobs"))).StatusCode);
    }

    [Fact]
    public async Task A_rate_limit_of_0_means_no_limit()
    {
        var (_, key) = await fx.NewCustomerAsync(settings: new TenantSettings(["text"], RateLimit: 0, RateBurst: 0));
        var http = fx.Api.ClientWithKey(key);
        for (var i = 0; i < 30; i++)
        {
            Assert.Equal(HttpStatusCode.OK, (await http.GetAsync(U("/jobs"))).StatusCode);
        }
    }
}
