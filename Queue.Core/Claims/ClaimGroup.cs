namespace Queue.Core.Claims;

/// <summary>
/// One task filter's callers in a claim flush: which claimed-ahead items and which fresh slots each caller gets, as a
/// <see cref="ClaimOrder"/> for the transaction, and the answer shared back out per caller in request order.
/// </summary>
internal sealed class ClaimGroup(string key, IReadOnlyList<ClaimRequest> requests)
{
    private readonly List<int> handoutOwners = [];
    private readonly List<int> slotOwners = [];

    public string Key { get; } = key;

    public IReadOnlyList<ClaimRequest> Requests { get; } = requests;

    /// <summary>Claimed-ahead items to hand out in this flush, oldest first.</summary>
    public List<TakenItem> FromBuffer { get; } = [];

    /// <summary>Items claimed ahead by this flush, for the buffer.</summary>
    public List<TakenItem> NewBuffer { get; } = [];

    /// <summary>How many items to claim ahead beyond what the callers asked for.</summary>
    public int Surplus { get; set; }

    /// <summary>What each caller gets, by position in <see cref="Requests"/>.</summary>
    public List<TakenItem>[] Results { get; } = requests.Select(_ => new List<TakenItem>()).ToArray();

    /// <summary>Buffered items go to the callers in order, then each caller's remaining wants become slots, then the surplus as reservations.</summary>
    public ClaimOrder Order(DateTime now, ClaimOptions o)
    {
        var need = Requests.Select(r => r.Max).ToArray();
        var handouts = new List<Handout>(FromBuffer.Count);
        var wi = 0;
        foreach (var item in FromBuffer)
        {
            while (need[wi] == 0)
            {
                wi++;
            }
            handouts.Add(new Handout(item, LeaseFor(Requests[wi], now)));
            handoutOwners.Add(wi);
            need[wi]--;
        }
        var slots = new List<ClaimSlot>();
        for (var i = 0; i < Requests.Count; i++)
        {
            for (var k = 0; k < need[i]; k++)
            {
                slots.Add(LeaseFor(Requests[i], now));
                slotOwners.Add(i);
            }
        }
        var reservedUntil = now.AddSeconds(o.ReservationSeconds);
        for (var k = 0; k < Surplus; k++)
        {
            slots.Add(new ClaimSlot(null, reservedUntil, Reservation: true));
        }
        return new ClaimOrder(Requests[0].Tasks, handouts, slots);
    }

    /// <summary>Gives each caller its items from the transaction's <paramref name="outcome"/>; the surplus goes to <see cref="NewBuffer"/>.</summary>
    public void Share(ClaimOutcome outcome)
    {
        for (var k = 0; k < outcome.ForHandouts.Count; k++)
        {
            if (outcome.ForHandouts[k] is { } item)
            {
                Results[handoutOwners[k]].Add(item);
            }
        }
        for (var k = 0; k < outcome.ForSlots.Count; k++)
        {
            if (k < slotOwners.Count)
            {
                Results[slotOwners[k]].Add(outcome.ForSlots[k]);
            }
            else
            {
                NewBuffer.Add(outcome.ForSlots[k]);
            }
        }
    }

    private static ClaimSlot LeaseFor(ClaimRequest r, DateTime now) => new(r.Worker, now.AddSeconds(r.LeaseSeconds), Reservation: false);
}
