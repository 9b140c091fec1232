using System.Net;
using System.Net.Http.Json;
using System.Text.Json;

namespace Queue.Tests.Work;

/// <summary>Required reliability test 3: a lease kept alive by extend stays its worker's for five times its length.</summary>
public sealed class ExtendOwnershipTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task A_lease_extended_again_and_again_stays_the_workers_for_five_times_its_length_and_nobody_else_gets_the_item()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 1, ["extend-own"]);
        using var owner = fx.Worker();
        using var rival = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(owner, new { worker = "owner", tasks = new[] { "extend-own" }, lease = 10 });
        var id = item.GetProperty("id").GetInt64();
        var token = item.GetProperty("leaseToken").GetString();

        // Six rounds of 8 s on the service's clock, each ended by an extend of 10 s: 48 s, almost five lease lengths
        // past the first expiry, and the lease is still the owner's at every step.
        for (var round = 1; round <= 6; round++)
        {
            fx.Clock.Advance(TimeSpan.FromSeconds(8));
            Assert.Empty(await WorkFixture.ClaimAsync(rival, new { worker = "rival", tasks = new[] { "extend-own" }, max = 10 }));
            using var extended = await owner.PostAsJsonAsync($"/items/{id}/extend", new { leaseToken = token, lease = 10 });
            Assert.Equal(HttpStatusCode.OK, extended.StatusCode);
            var expires = (await extended.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("leaseExpiresAt").GetDateTime();
            Assert.Equal(fx.Now.AddSeconds(10), expires.ToUniversalTime(), TimeSpan.FromSeconds(1));
        }
        fx.Clock.Advance(TimeSpan.FromSeconds(8)); // 56 s after the claim: more than five lease lengths
        Assert.Empty(await WorkFixture.ClaimAsync(rival, new { worker = "rival", tasks = new[] { "extend-own" }, max = 10 }));
        using var done = await owner.PostAsJsonAsync($"/items/{id}/complete", new { leaseToken = token });
        Assert.Equal(HttpStatusCode.NoContent, done.StatusCode);
        var row = await fx.ItemAsync(id);
        Assert.Equal((2, 1), ((int)row.State, row.Attempts));
        Assert.Null(row.LastError);
    }
}
