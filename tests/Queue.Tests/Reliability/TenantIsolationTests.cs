using System.Net;
using System.Text;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>Reliability (docs/DESIGN.md "Invariants that failures must not break"): another tenant's objects are invisible, and a body cannot set what the service owns.</summary>
public sealed class TenantIsolationTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    private const string Secret = "only-tenant-a-may-read-this";

    [Fact]
    public async Task Every_route_on_another_tenants_job_document_and_items_answers_404_with_none_of_its_data()
    {
        var (_, keyA) = await fx.NewCustomerAsync();
        var (_, keyB) = await fx.NewCustomerAsync();
        var a = fx.Api.ClientWithKey(keyA);
        var b = fx.Api.ClientWithKey(keyB);
        var created = await a.CreateJobAsync(new
        {
            name = "tenant-a-secret-job",
            tasks = new[] { "text" },
            open = true,
            documents = new[] { new { name = "secret.txt", content = B64(Secret) } },
        });
        var job = created.GetProperty("id").GetInt64();
        var document = created.GetProperty("created")[0].GetProperty("id").GetInt64();

        var probes = new List<HttpResponseMessage>
        {
            await b.GetAsync(U($"/jobs/{job}")),
            await b.GetAsync(U($"/jobs/{job}/documents")),
            await b.GetAsync(U($"/jobs/{job}/documents/{document}")),
            await b.GetAsync(U($"/jobs/{job}/items")),
            await b.GetAsync(U($"/jobs/{job}/explain")),
            await b.UploadRawAsync(job, Encoding.UTF8.GetBytes("intruder")),
            await b.PostAsync(U($"/jobs/{job}/close"), null),
            await b.DeleteAsync(U($"/jobs/{job}")),
        };
        // Neighbouring ids too, as an enumeration would try them.
        for (var id = job - 2; id <= job + 2; id++)
        {
            probes.Add(await b.GetAsync(U($"/jobs/{id}")));
            probes.Add(await b.GetAsync(U($"/jobs/{id}/documents/{document}")));
        }

        foreach (var r in probes)
        {
            Assert.Equal(HttpStatusCode.NotFound, r.StatusCode);
            var body = await r.Content.ReadAsStringAsync();
            Assert.DoesNotContain(Secret, body, StringComparison.Ordinal);
            Assert.DoesNotContain("tenant-a-secret-job", body, StringComparison.Ordinal);
            Assert.DoesNotContain("secret.txt", body, StringComparison.Ordinal);
        }
        // Nothing changed: the job is still open, with its one document, for its owner.
        var status = await (await a.GetAsync(U($"/jobs/{job}"))).BodyAsync();
        Assert.Equal("open", status.GetProperty("state").GetString());
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
    }

    [Theory]
    [InlineData("priority", "5")]
    [InlineData("tenant", "\"someone-else\"")]
    [InlineData("state", "\"done\"")]
    [InlineData("id", "1")]
    public async Task A_submit_body_carrying_a_field_the_service_owns_gets_400_naming_it_and_creates_nothing(string field, string value)
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var body = $$"""{"name":"mass-assignment","tasks":["text"],"documents":[{"name":"a.txt","content":"{{B64("a")}}"}],"{{field}}":{{value}}}""";

        using var r = await http.PostAsync(U("/jobs"), Json(body));

        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        Assert.Contains(field, await r.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE tenant_id = @Id", new { tenant.Id }));
    }
}
