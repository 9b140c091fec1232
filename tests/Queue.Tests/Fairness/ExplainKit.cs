using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

internal static class ExplainKit
{
    public static async Task<(HttpStatusCode Status, JsonElement Body)> ExplainAsync(WorkFixture fx, string customerKey, long jobId)
    {
        using var http = fx.Api.CreateClient();
        http.DefaultRequestHeaders.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", customerKey);
        using var r = await http.GetAsync(new Uri($"/jobs/{jobId}/explain", UriKind.Relative));
        return (r.StatusCode, await r.Content.ReadFromJsonAsync<JsonElement>());
    }

    public static long Ahead(JsonElement e, string reason) => e.GetProperty("ahead").GetProperty(reason).GetInt64();
}
